package pgstore_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// As fleet's TestReplicasHolderDropsAGiveBackOfAnEndedHandOut, on
// PostgreSQL: job 1's give-back, repeated after the node was handed out
// again to job 2 and the holder died, is refused by the replica that took
// the fleet over (the hand-out is on the stored record), and an idle mark
// of job 1's hand-out stored anyway is dropped: the node stays busy with
// job 2 past its IdleTimeout. Job 2's give-back frees it.
func TestGiveBackOfAnEndedHandOutAcrossATakeover(t *testing.T) {
	w, a, b, stores, name := giveBackReplicas(t, "tgb")
	job1, err := a.Acquire(t.Context(), name)
	require.NoError(t, err)
	until(t, w, time.Second, func() bool { return false }, a, b)
	require.NoError(t, b.GiveBack(job1))
	job2, err := a.Acquire(t.Context(), name)
	require.NoError(t, err)
	require.Equal(t, job1.ID, job2.ID)
	require.True(t, until(t, w, 5*time.Second, func() bool { return all(a, name, 1, fleet.StatusBusy) }, a, b))
	a.Close() // dies
	require.True(t, until(t, w, 10*time.Second, func() bool { return holdsLease(t, stores[1], name, "b") && all(b, name, 1, fleet.StatusBusy) }, b), "b took over")
	assert.ErrorIs(t, b.GiveBack(job1), fleet.ErrHandedOutAgain, "job 1's give-back, late")
	_, err = stores[1].PutIntent(t.Context(), fleet.Intent{Fleet: name, Kind: fleet.IntentIdle, InstanceID: job1.RequestID,
		Acquire: job1.HandOut, At: w.clock.Now()})
	require.NoError(t, err)
	for range 180 { // 30 minutes of cloud time: 6 IdleTimeouts
		_ = b.Reconcile(t.Context())
		w.clock.Advance(10 * time.Second)
	}
	assert.True(t, all(b, name, 1, fleet.StatusBusy), "job 2's node: %v", b.Instances(name))
	_, err = b.Acquire(t.Context(), name)
	assert.ErrorIs(t, err, fleet.ErrNoIdle)
	require.NoError(t, b.GiveBack(job2))
	assert.True(t, until(t, w, 5*time.Second, func() bool { return all(b, name, 1, fleet.StatusIdle) }, b), "given back by job 2")
	require.NoError(t, b.Delete(t.Context(), name))
	until(t, w, 10*time.Second, func() bool { return len(b.Fleets()) == 0 }, b)
}

// As fleet's TestReplicasGiveBackAfterTheJobsOwnMarkBusy, on PostgreSQL:
// the job's own MarkBusy (a heartbeat), recorded through the replica that
// does not hold the fleet and carried out by the holder, keeps its
// hand-out on the stored record; after the holder's death the replica
// that took the fleet over takes the job's GiveBack, and the node is idle.
// (tester AZ: before the fix, that GiveBack answered ErrHandedOutAgain and
// the node stayed busy with no job.)
func TestGiveBackAfterTheJobsOwnMarkBusyAcrossATakeover(t *testing.T) {
	w, a, b, stores, name := giveBackReplicas(t, "tgm")
	job, err := a.Acquire(t.Context(), name)
	require.NoError(t, err)
	require.True(t, until(t, w, 5*time.Second, func() bool { return all(a, name, 1, fleet.StatusBusy) }, a, b))
	require.NoError(t, b.MarkBusy(job.ID), "the job's heartbeat, through the other replica")
	stored := func() fleet.InstanceRecord {
		recs, err := stores[1].Instances(t.Context())
		require.NoError(t, err)
		for _, r := range recs {
			if r.Instance.Fleet == name && r.Instance.Status.Active() {
				return r
			}
		}
		return fleet.InstanceRecord{}
	}
	marked := func() bool {
		ins, err := stores[1].Intents(t.Context(), name)
		require.NoError(t, err)
		for _, in := range ins {
			if in.Kind == fleet.IntentBusy && in.Acquire == "" {
				return false // not carried out (acknowledged) yet
			}
		}
		return true
	}
	require.True(t, until(t, w, 10*time.Second, marked, a, b), "the holder carries the MarkBusy out")
	assert.Equal(t, job.HandOut, stored().HandOut, "the job's own MarkBusy keeps its hand-out")
	a.Close() // dies
	require.True(t, until(t, w, 10*time.Second, func() bool { return holdsLease(t, stores[1], name, "b") && all(b, name, 1, fleet.StatusBusy) }, b), "b took over")
	require.NoError(t, b.GiveBack(job), "the job's own give-back")
	assert.True(t, until(t, w, 5*time.Second, func() bool { return all(b, name, 1, fleet.StatusIdle) }, b), "given back: %v", b.Instances(name))
	require.NoError(t, b.Delete(t.Context(), name))
	until(t, w, 10*time.Second, func() bool { return len(b.Fleets()) == 0 }, b)
}

// A node released under its job (by ReleaseAtReservationEnd: the release
// waits for its 30-min minimum's end, paid anyway) keeps the job's
// hand-out on its stored record (Termination.HandOut, Termination.Busy).
// After the holder's death, the replica that took the fleet over takes
// the job's GiveBack (nil), refuses job 1's earlier hand-out
// (ErrHandedOutAgain) and a MarkBusy, and carries the give-back out: the
// job ended (Termination.Busy false), the release stands. Repeated, the
// give-back answers nil.
// (before the fix: the give-back answered "terminating, not ready" and
// Termination.Busy stayed: the release never gave way to a fleet refused
// its stock.)
func TestGiveBackOfANodeInReleaseAcrossATakeover(t *testing.T) {
	w, a, b, stores, name := giveBackReplicas(t, "tgr")
	job1, err := a.Acquire(t.Context(), name)
	require.NoError(t, err)
	require.NoError(t, a.GiveBack(job1))
	job2, err := a.Acquire(t.Context(), name)
	require.NoError(t, err)
	require.Equal(t, job1.ID, job2.ID)
	require.True(t, until(t, w, 5*time.Second, func() bool { return all(a, name, 1, fleet.StatusBusy) }, a, b))
	at, err := b.Release(t.Context(), job2.ID, fleet.WithReleasePolicy(fleet.ReleaseAtReservationEnd))
	require.NoError(t, err)
	require.True(t, at.After(w.clock.Now().Add(10*time.Minute)), "the release waits for the minimum's end: %v", at)
	stored := func() fleet.InstanceRecord {
		recs, err := stores[1].Instances(t.Context())
		require.NoError(t, err)
		for _, r := range recs {
			if r.Instance.RequestID == job2.RequestID {
				return r
			}
		}
		t.Fatalf("no stored record of %s", job2.RequestID)
		return fleet.InstanceRecord{}
	}
	require.True(t, until(t, w, 10*time.Second, func() bool { return stored().Termination != nil }, a, b), "the release carried out")
	rec := stored()
	assert.True(t, rec.Termination.Busy, "released under job 2")
	assert.Equal(t, job2.HandOut, rec.Termination.HandOut, "the hand-out stored with its release")
	a.Close() // dies
	require.True(t, until(t, w, 10*time.Second, func() bool { return holdsLease(t, stores[1], name, "b") }, b), "b took over")
	assert.ErrorIs(t, b.GiveBack(job1), fleet.ErrHandedOutAgain, "job 1's give-back, late")
	assert.Error(t, b.MarkBusy(job2.ID), "MarkBusy of a node in release")
	require.NoError(t, b.GiveBack(job2), "job 2's own give-back of a node whose release waits")
	require.True(t, until(t, w, 10*time.Second, func() bool { return !stored().Termination.Busy }, b), "the give-back carried out: %+v", stored().Termination)
	rec = stored()
	assert.Equal(t, fleet.StatusTerminating, rec.Instance.Status, "the release stands")
	assert.Empty(t, rec.Termination.HandOut, "job 2's hand-out ended")
	assert.NoError(t, b.GiveBack(job2), "repeated: nothing to do")
	require.NoError(t, b.Delete(t.Context(), name))
	until(t, w, 10*time.Second, func() bool { return len(b.Fleets()) == 0 }, b)
}

// giveBackReplicas starts replicas "a" and "b" (owner, ReleaseNow, a 1-s
// lease) on a fresh PostgreSQL schema, waits for both to be alive, and
// applies a fleet of one Hot Aisle VM (IdleTimeout 5 min) held by "a",
// waiting for its node to be idle.
func giveBackReplicas(t *testing.T, owner string) (*world, *fleet.Manager, *fleet.Manager, []*pgstore.Store, string) {
	t.Helper()
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	w := newWorld(t, 10)
	var ms []*fleet.Manager
	var stores []*pgstore.Store
	for _, id := range []string{"a", "b"} {
		s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
		require.NoError(t, err)
		t.Cleanup(s.Close)
		m, err := fleet.NewManager(fleet.Config{Providers: w.providers, Clock: w.clock, Store: s, Owner: owner,
			ReplicaID: id, Policy: fleet.Policy{Release: fleet.ReleaseNow, LeaseTTL: time.Second}})
		require.NoError(t, err)
		t.Cleanup(m.Close)
		ms, stores = append(ms, m), append(stores, s)
	}
	a, b := ms[0], ms[1]
	name := fleetFor("a", []string{"a", "b"})
	require.True(t, until(t, w, 5*time.Second, func() bool {
		ls, _ := stores[0].Leases(t.Context())
		return len(ls) >= 2
	}, a, b))
	require.NoError(t, a.Apply(t.Context(), fleet.Spec{Name: name, Nodes: 1, Requirements: hotVMs(), IdleTimeout: 5 * time.Minute}))
	require.True(t, until(t, w, 30*time.Second, func() bool { return all(a, name, 1, fleet.StatusIdle) }, a, b), "not converged")
	return w, a, b, stores, name
}
