package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holderOf returns the index of the replica holding fleet's lease (-1: none).
func (rs *replicaSet) holderOf(t *testing.T, fleetName string) int {
	t.Helper()
	ls, err := rs.store.Leases(t.Context())
	require.NoError(t, err)
	for _, l := range ls {
		if l.Name == fleet.FleetLease(fleetName) {
			for i := range rs.ms {
				if l.Holder == replicaName(i) {
					return i
				}
			}
		}
	}
	return -1
}

func replicaName(i int) string { return "r" + string(rune('0'+i)) }

// storedIdle returns the request ids of fleet's idle members, by the store.
func storedIdle(t *testing.T, store fleet.Store, fleetName string) []fleet.InstanceRecord {
	t.Helper()
	recs, err := store.Instances(t.Context())
	require.NoError(t, err)
	var out []fleet.InstanceRecord
	for _, r := range recs {
		if r.Instance.Fleet == fleetName && r.Instance.Status == fleet.StatusIdle && r.Termination == nil {
			out = append(out, r)
		}
	}
	return out
}

// An orchestrator releases node X through a replica that does not hold the
// fleet, then marks node Y busy through the replica that holds it. Issue 14
// point 2: "Apply/Delete/Release on any replica reach the replica holding
// the fleet (the intents are stored)". Both calls returned nil, so both
// must be carried out: X released (gone from the cloud), Y busy.
//
// The holder queues its own intent (higher Seq) locally and carries it out
// at once; when its next lease sync reads the other replica's intent (lower
// Seq, stored earlier) it skips it as already applied and acknowledges past
// it: the release is lost for good and X keeps billing.
func TestReleaseOnOneReplicaThenMarkOnHolderTesterD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("lo", 2, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"lo": 2}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		time.Sleep(20 * time.Minute) // past any lock after boot
		h := rs.holderOf(t, "lo")
		require.GreaterOrEqual(t, h, 0, "someone holds the fleet")
		o := 1 - h
		idle := storedIdle(t, store, "lo")
		require.Len(t, idle, 2)
		x, y := idle[0].Instance, idle[1].Instance
		_, err := rs.ms[o].Release(t.Context(), x.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
		require.NoError(t, err)
		require.NoError(t, rs.ms[h].MarkBusy(y.ID))
		time.Sleep(30 * time.Minute)
		var xLive bool
		for _, r := range e.vultr.Resources() {
			if r.ID == x.ID && r.Live() {
				xLive = true
			}
		}
		assert.False(t, xLive, "instance %s released through replica %d (call returned nil) is still running 30 min later", x.ID, o)
		recs, err := store.Instances(t.Context())
		require.NoError(t, err)
		for _, r := range recs {
			if r.Instance.RequestID == y.RequestID {
				assert.Equal(t, fleet.StatusBusy, r.Instance.Status, "Y marked busy on the holder")
			}
		}
		for _, m := range rs.ms {
			_ = m.Delete(t.Context(), "lo")
		}
		for deadline := time.Now().Add(3 * time.Hour); len(rs.ms[0].Fleets()) > 0; time.Sleep(time.Minute) {
			require.True(t, time.Now().Before(deadline), "not deleted")
		}
		time.Sleep(time.Hour)
		rs.stopAll()
		e.assertNothingLeft()
	})
}

// Same kind on Hot Aisle with Delete: the orchestrator deletes the fleet
// through a replica that does not hold it (nil returned), and a job
// runner marks a node busy through the holder a moment later. The user
// expects the fleet gone and nothing billing (issue 14 point 2: intents
// recorded on any replica reach the holder); the Delete, which has the
// lower Seq, is skipped by the holder and acknowledged away.
func TestDeleteOnOneReplicaThenMarkOnHolderTesterD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("ld", 2, hotType("vm-mi300x-1"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"ld": 2}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		h := rs.holderOf(t, "ld")
		require.GreaterOrEqual(t, h, 0, "someone holds the fleet")
		o := 1 - h
		idle := storedIdle(t, store, "ld")
		require.Len(t, idle, 2)
		require.NoError(t, rs.ms[o].Delete(t.Context(), "ld", fleet.WithReleasePolicy(fleet.ReleaseNow)))
		require.NoError(t, rs.ms[h].MarkBusy(idle[0].Instance.ID))
		for deadline := time.Now().Add(3 * time.Hour); len(rs.ms[0].Fleets()) > 0; time.Sleep(time.Minute) {
			if !time.Now().Before(deadline) {
				break
			}
		}
		assert.Empty(t, rs.ms[0].Fleets(), "Delete returned nil 3 hours ago: the fleet should be gone")
		rs.stopAll()
		e.assertNothingLeft()
	})
}
