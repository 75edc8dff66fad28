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

// storedIdle returns fleet's idle members without a release decided, by the store.
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
// fleet, then marks node Y busy through the replica that holds it. Both
// calls returned nil, so both are carried out: X released (gone from the
// cloud), Y busy. The holder's own intent has the higher Seq: carried out
// first, it made the holder skip the earlier one when its lease sync read
// it back, and acknowledge it away (X kept billing).
func TestReleaseOnOneReplicaThenMarkOnHolder(t *testing.T) {
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

// The same on Hot Aisle with Delete: the fleet is deleted through the
// replica that does not hold it, and a node is marked busy through the
// holder a moment later: refused (its fleet's Delete is recorded, though
// not yet carried out). The fleet is gone within hours and nothing bills.
func TestDeleteOnOneReplicaThenMarkOnHolder(t *testing.T) {
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
		require.Error(t, rs.ms[h].MarkBusy(idle[0].Instance.ID), "its fleet's Delete is recorded")
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

// liveID reports whether the fakes still run a server with this id.
func (e *env) liveID(id string) bool {
	for _, r := range append(e.vultr.Resources(), e.hot.Resources()...) {
		if r.ID == id && r.Live() {
			return true
		}
	}
	return false
}

// storedFleetSpec returns the stored spec of fleet (Nodes -1: not stored).
func storedFleetSpec(t *testing.T, store fleet.Store, name string) fleet.Spec {
	t.Helper()
	fs, err := store.Fleets(t.Context())
	require.NoError(t, err)
	for _, f := range fs {
		if f.Spec.Name == name {
			return f.Spec
		}
	}
	return fleet.Spec{Name: name, Nodes: -1}
}

// Intents recorded through the replica that does not hold a fleet and, a
// moment later, through the one that holds it are all carried out, in the
// order they were recorded (a later spec wins), whatever their kinds.
func TestIntentsThroughBothReplicasRunInRecordedOrder(t *testing.T) {
	type call func(t *testing.T, m *fleet.Manager, x, y fleet.Instance)
	apply := func(n int) call {
		return func(t *testing.T, m *fleet.Manager, _, _ fleet.Instance) {
			require.NoError(t, m.Apply(t.Context(), spec("io", n, vultrVM("ewr"))))
		}
	}
	release := func(x bool) call {
		return func(t *testing.T, m *fleet.Manager, a, b fleet.Instance) {
			id := b.ID
			if x {
				id = a.ID
			}
			_, err := m.Release(t.Context(), id, fleet.WithReleasePolicy(fleet.ReleaseNow))
			require.NoError(t, err)
		}
	}
	busyX := func(t *testing.T, m *fleet.Manager, x, _ fleet.Instance) { require.NoError(t, m.MarkBusy(x.ID)) }
	idleX := func(t *testing.T, m *fleet.Manager, x, _ fleet.Instance) { require.NoError(t, m.MarkIdle(x.ID)) }
	for _, tc := range []struct {
		name          string
		other, holder call
		nodes         int  // the stored spec's nodes at the end
		xGone, yGone  bool // released
		xBusy         bool
		oneGone       bool // x or y released (scaled down), not both
	}{
		{name: "apply 3 nodes, then release y", other: apply(3), holder: release(false), nodes: 3, yGone: true},
		{name: "release x, then release y", other: release(true), holder: release(false), nodes: 2, xGone: true, yGone: true},
		{name: "mark x busy, then release y", other: busyX, holder: release(false), nodes: 2, xBusy: true, yGone: true},
		{name: "release x, then apply 1 node", other: release(true), holder: apply(1), nodes: 1, xGone: true},
		{name: "apply 3 nodes, then apply 1", other: apply(3), holder: apply(1), nodes: 1, oneGone: true},
		{name: "apply 1 node, then apply 3", other: apply(1), holder: apply(3), nodes: 3},
		{name: "mark x idle, then mark x busy", other: idleX, holder: busyX, nodes: 2, xBusy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := fleet.NewMemoryLeaseStore(nil)
				rs := newReplicaSet(t, e, store, 2)
				require.NoError(t, rs.ms[0].Apply(t.Context(), spec("io", 2, vultrVM("ewr"))))
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"io": 2}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged")
				}
				time.Sleep(20 * time.Minute) // past Vultr's lock after boot
				h := rs.holderOf(t, "io")
				require.GreaterOrEqual(t, h, 0, "someone holds the fleet")
				idle := storedIdle(t, store, "io")
				require.Len(t, idle, 2)
				x, y := idle[0].Instance, idle[1].Instance
				tc.other(t, rs.ms[1-h], x, y)
				tc.holder(t, rs.ms[h], x, y)
				time.Sleep(30 * time.Minute)
				assert.Equal(t, tc.nodes, storedFleetSpec(t, store, "io").Nodes, "the later spec wins")
				if tc.oneGone {
					assert.True(t, e.liveID(x.ID) != e.liveID(y.ID), "one of x and y released")
				} else {
					assert.Equal(t, tc.xGone, !e.liveID(x.ID), "x released")
					assert.Equal(t, tc.yGone, !e.liveID(y.ID), "y released")
				}
				recs, err := store.Instances(t.Context())
				require.NoError(t, err)
				for _, r := range recs {
					if r.Instance.RequestID == x.RequestID && !tc.xGone {
						assert.Equal(t, tc.xBusy, r.Instance.Status == fleet.StatusBusy, "x busy")
					}
				}
				require.NoError(t, rs.ms[h].Delete(t.Context(), "io"))
				time.Sleep(3 * time.Hour)
				rs.stopAll()
				e.assertNothingLeft()
			})
		})
	}
}
