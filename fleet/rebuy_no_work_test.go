package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storedFleet is fleet's FleetRecord as the store has it.
func storedFleet(t *testing.T, store fleet.Store, name string) fleet.FleetRecord {
	t.Helper()
	fs, err := store.Fleets(t.Context())
	require.NoError(t, err)
	for _, f := range fs {
		if f.Spec.Name == name {
			return f
		}
	}
	t.Fatalf("fleet %s not stored", name)
	return fleet.FleetRecord{}
}

// firstJob is the stored RebuyKind.FirstJob of f for a minimum (zero if none).
func firstJob(f fleet.FleetRecord, minimum time.Duration) time.Time {
	for _, k := range f.RebuyKinds {
		if k.Minimum == minimum {
			return k.FirstJob
		}
	}
	return time.Time{}
}

// A node handed out (Acquire, or MarkBusy) and given back (GiveBack, or
// MarkIdle) within a minute did no work: a job cancelled once placed. On a
// 1-node Hot Aisle VM fleet (30-minute minimum, IdleTimeout 5 min, default
// Policy) with no job ever run, such a hand-out at 20 minutes — given back at
// once, 30 s later, by MarkIdle, or across a restart of the Manager between
// the two — records no job and no first job (FleetRecord.Jobs,
// RebuyKind.FirstJob, as stored), and the node goes at its minimum's end,
// as with no hand-out (it was held a whole minimum more: billed 1 h,
// $1.50 more). A job that runs 2 minutes is a job (a guard).
func TestHandOutGivenBackAtOnceIsNoJob(t *testing.T) {
	type step func(t *testing.T, e *env, id string)
	acquire := func(t *testing.T, e *env, _ string) fleet.Instance {
		in, err := e.m.Acquire(t.Context(), "nw")
		require.NoError(t, err)
		return in
	}
	for _, c := range []struct {
		name string
		do   step
		job  bool
	}{
		{"Acquire then GiveBack at once", func(t *testing.T, e *env, id string) {
			require.NoError(t, e.m.GiveBack(acquire(t, e, id)))
		}, false},
		{"GiveBack 30 s later", func(t *testing.T, e *env, id string) {
			in := acquire(t, e, id)
			e.run(30 * time.Second)
			require.NoError(t, e.m.GiveBack(in))
		}, false},
		{"MarkBusy then MarkIdle at once", func(t *testing.T, e *env, id string) {
			require.NoError(t, e.m.MarkBusy(id))
			require.NoError(t, e.m.MarkIdle(id))
		}, false},
		{"a restart between Acquire and GiveBack", func(t *testing.T, e *env, id string) {
			in := acquire(t, e, id)
			e.run(10 * time.Second) // the hand-out and its first job stored
			require.False(t, firstJob(storedFleet(t, e.store, "nw"), 30*time.Minute).IsZero(), "the busy mark is stored")
			e.m.Close()
			e.m = e.manager(e.store)
			require.NoError(t, e.m.Reconcile(t.Context()))
			require.NoError(t, e.m.GiveBack(in))
		}, false},
		{"a 2-minute job (guard)", func(t *testing.T, e *env, id string) {
			in := acquire(t, e, id)
			e.run(2 * time.Minute)
			require.NoError(t, e.m.GiveBack(in))
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				s := spec("nw", 1, hotType("vm-mi300x-1"))
				s.IdleTimeout = 5 * time.Minute
				require.NoError(t, e.m.Apply(t.Context(), s))
				require.True(t, e.runUntil(time.Hour, func() bool {
					in := e.m.Instances("nw")
					return len(in) == 1 && in[0].Status == fleet.StatusIdle
				}), "not ready")
				in := e.only("nw")
				time.Sleep(time.Until(in.Created.Add(20 * time.Minute)))
				c.do(t, e, in.ID)
				e.run(15 * time.Second)
				f := storedFleet(t, e.store, "nw")
				if c.job {
					require.Len(t, f.Jobs, 1, "the 2-minute job is recorded")
					assert.True(t, firstJob(f, 30*time.Minute).Equal(f.Jobs[0].Start), "first job %v, the job started %v",
						firstJob(f, 30*time.Minute), f.Jobs[0].Start)
				} else {
					assert.Empty(t, f.Jobs, "a hand-out that did no work is no job")
					assert.True(t, firstJob(f, 30*time.Minute).IsZero(), "the hold starts from no job: first job %v", firstJob(f, 30*time.Minute))
				}
				e.run(2 * time.Hour)
				require.NoError(t, e.m.Delete(t.Context(), "nw"))
				e.run(time.Hour)
				e.assertNothingLeft()
				cs := servers(e.hot.Ledger().Charges)
				require.Len(t, cs, 1)
				if !c.job {
					assert.LessOrEqual(t, cs[0].Billed, 31*time.Minute, "a node no job ran on billed %v ($%.2f): held past its minimum", cs[0].Billed, cs[0].USD)
				}
			})
		})
	}
}

// A hand-out given back at once while another node of the fleet runs a job
// that started after it: the fleet's first job is that job's start (the
// hand-out set it, and it is taken back to the earliest job left), and a
// later real job does not move it.
func TestHandOutGivenBackAtOnceLeavesTheNextJobFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		s := spec("nw2", 2, hotType("vm-mi300x-1"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		require.True(t, e.runUntil(time.Hour, func() bool {
			n := 0
			for _, in := range e.m.Instances("nw2") {
				if in.Status == fleet.StatusIdle {
					n++
				}
			}
			return n == 2
		}), "not ready")
		a, err := e.m.Acquire(t.Context(), "nw2")
		require.NoError(t, err)
		e.run(10 * time.Second)
		b, err := e.m.Acquire(t.Context(), "nw2")
		require.NoError(t, err)
		started := time.Now()
		e.run(10 * time.Second)
		require.NoError(t, e.m.GiveBack(a)) // cancelled: 20 s, no work
		e.run(20 * time.Second)
		f := storedFleet(t, e.store, "nw2")
		assert.Empty(t, f.Jobs)
		assert.True(t, firstJob(f, 30*time.Minute).Equal(started), "first job %v, the job under way started %v", firstJob(f, 30*time.Minute), started)
		e.run(5 * time.Minute)
		require.NoError(t, e.m.GiveBack(b))
		e.run(20 * time.Second)
		f = storedFleet(t, e.store, "nw2")
		require.Len(t, f.Jobs, 1)
		assert.True(t, f.Jobs[0].Start.Equal(started))
		assert.True(t, firstJob(f, 30*time.Minute).Equal(started), "first job %v", firstJob(f, 30*time.Minute))
		require.NoError(t, e.m.Delete(t.Context(), "nw2"))
		e.run(3 * time.Hour)
		e.assertNothingLeft()
	})
}

// A hand-out given back at once whose fleet write is lost (the Manager dies
// after writing the node's record idle, before writing the fleet's): the
// first job its Acquire stored is taken back by the Manager that restarts
// on the store, which reads the hand-out's end from the node's record.
func TestHandOutGivenBackAtOnceFleetWriteLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &halfWriteStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil)}
		e.m.Close()
		e.store, e.m = store, e.manager(store)
		s := spec("nw3", 1, hotType("vm-mi300x-1"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		require.True(t, e.runUntil(time.Hour, func() bool {
			in := e.m.Instances("nw3")
			return len(in) == 1 && in[0].Status == fleet.StatusIdle
		}), "not ready")
		in := e.only("nw3")
		time.Sleep(time.Until(in.Created.Add(20 * time.Minute)))
		got, err := e.m.Acquire(t.Context(), "nw3")
		require.NoError(t, err)
		e.run(10 * time.Second)
		require.False(t, firstJob(storedFleet(t, store, "nw3"), 30*time.Minute).IsZero(), "the busy mark is stored")
		store.failFleet.Store(true)
		require.NoError(t, e.m.GiveBack(got))
		_ = e.m.Reconcile(t.Context()) // the node's record written, the fleet's lost
		e.m.Close()
		store.failFleet.Store(false)
		require.False(t, firstJob(storedFleet(t, store, "nw3"), 30*time.Minute).IsZero(), "the fleet write was lost")
		e.m = e.manager(store)
		e.run(time.Minute)
		f := storedFleet(t, store, "nw3")
		assert.Empty(t, f.Jobs)
		assert.True(t, firstJob(f, 30*time.Minute).IsZero(), "first job %v", firstJob(f, 30*time.Minute))
		e.run(2 * time.Hour)
		require.NoError(t, e.m.Delete(t.Context(), "nw3"))
		e.run(time.Hour)
		e.assertNothingLeft()
		cs := servers(e.hot.Ledger().Charges)
		require.Len(t, cs, 1)
		assert.LessOrEqual(t, cs[0].Billed, 31*time.Minute, "billed %v: held past its minimum", cs[0].Billed)
	})
}
