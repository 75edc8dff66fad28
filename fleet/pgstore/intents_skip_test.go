package pgstore_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On PostgreSQL: node X is released through replica b (which does not
// hold the fleet) and, a moment later, node Y is marked busy through
// replica a (the holder). Both calls return nil, and both are carried out
// in Seq order: X is released although a's own later intent reached a
// first.
func TestReleaseThroughNonHolderThenMarkOnHolder(t *testing.T) {
	w, a, b, name := twoReplicasOneFleet(t)
	insts := a.m.Instances(name)
	x, y := insts[0], insts[1]
	_, err := b.m.Release(t.Context(), x.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
	require.NoError(t, err)
	require.NoError(t, a.m.MarkBusy(y.ID))
	gone := func() bool {
		for _, r := range w.v.Resources() {
			if r.ID == x.ID {
				return !r.Live()
			}
		}
		return false
	}
	assert.True(t, until(t, w, 8*time.Second, gone, a.m, b.m), "%s released through b is still running", x.ID)
	require.NoError(t, b.m.Delete(t.Context(), name))
	until(t, w, 8*time.Second, func() bool { l, _ := liveVultr(w); return l == 0 }, a.m, b.m)
	live, _ := liveVultr(w)
	assert.Zero(t, live, "leak after Delete")
}

// The same with Delete on PostgreSQL: the fleet is deleted through b (not
// the holder) and a node is marked busy through a (the holder) a moment
// later: refused (the fleet's Delete is recorded); the fleet is gone and
// nothing runs.
func TestDeleteThroughNonHolderThenMarkOnHolder(t *testing.T) {
	w, a, b, name := twoReplicasOneFleet(t)
	require.NoError(t, b.m.Delete(t.Context(), name, fleet.WithReleasePolicy(fleet.ReleaseNow)))
	require.Error(t, a.m.MarkBusy(a.m.Instances(name)[0].ID), "the fleet's Delete is recorded")
	gone := func() bool {
		fs, err := a.s.Fleets(t.Context())
		live, _ := liveVultr(w)
		return err == nil && len(fs) == 0 && live == 0
	}
	assert.True(t, until(t, w, 8*time.Second, gone, a.m, b.m), "the fleet deleted through b is still there")
}

// twoReplicasOneFleet starts replicas a and b on one schema and a fleet of
// two idle Vultr VMs that a holds; it returns them and the fleet's name.
func twoReplicasOneFleet(t *testing.T) (*world, replicaUnderTest, replicaUnderTest, string) {
	t.Helper()
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	w := newWorld(t, 10)
	a := startReplica(t, w, dsn, schema, "a", w.providers[0])
	b := startReplica(t, w, dsn, schema, "b", w.providers[0])
	name := fleetFor("a", []string{"a", "b"})
	require.True(t, until(t, w, 5*time.Second, func() bool {
		ls, _ := a.s.Leases(t.Context())
		return len(ls) >= 2
	}, a.m, b.m))
	require.NoError(t, a.m.Apply(t.Context(), fleet.Spec{Name: name, Nodes: 2, Requirements: vultrVMs()}))
	require.True(t, until(t, w, 15*time.Second, func() bool { return idleMembers(a.m, name, 2) }, a.m, b.m))
	return w, a, b, name
}
