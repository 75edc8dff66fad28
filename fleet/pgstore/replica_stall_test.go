package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/internal/pgtest"
)

// On PostgreSQL: the network between replica a (holding a fleet of one
// idle node) and the database stalls for about 4 s (four lease TTLs; nothing is
// closed, so a's statements go through once it comes back, well inside
// the 90 s CallTimeout) just as a's Acquire has picked the node and sent
// its busy mark. Replica b takes the fleet over and hands the node to a
// job. When the network comes back, a's Acquire must not return the same
// node (before the fix it did: handed out twice, by a replica whose lease
// had run out before it acted, issue 14 point 2): it finds its lease lost,
// answers ErrNoIdle, and voids its mark.
func TestStalledHolderDoesNotHandOutTheNodeAgainOnPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	p, pdsn := newCutProxy(t, dsn)
	w := newWorld(t, 10)
	a := startReplica(t, w, pdsn, schema, "a", w.providers[0])
	b := startReplica(t, w, dsn, schema, "b", w.providers[0])
	name := fleetFor("a", []string{"a", "b"})
	require.True(t, until(t, w, 5*time.Second, func() bool {
		ls, _ := b.s.Leases(t.Context())
		return len(ls) >= 2
	}, a.m, b.m))
	require.NoError(t, a.m.Apply(t.Context(), fleet.Spec{Name: name, Nodes: 1, Requirements: vultrVMs()}))
	require.True(t, until(t, w, 15*time.Second, func() bool { return idleMembers(a.m, name, 1) }, a.m, b.m))
	require.True(t, holdsLease(t, b.s, name, "a"))

	p.hang()
	type res struct {
		in  fleet.Instance
		err error
	}
	first := make(chan res, 1)
	go func() {
		in, err := a.m.Acquire(context.Background(), name)
		first <- res{in, err}
	}()
	var second fleet.Instance
	got := until(t, w, 3*time.Second, func() bool {
		in, err := b.m.Acquire(t.Context(), name)
		second = in
		return err == nil
	}, b.m)
	require.True(t, got, "b took the fleet over and handed its node out")
	until(t, w, time.Second, func() bool { return false }, b.m) // b's mark carried out and acknowledged
	p.restore(t)
	var r res
	select {
	case r = <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("a's Acquire did not return")
	}
	t.Logf("a: %s %v; b: %s", r.in.RequestID, r.err, second.RequestID)
	if r.err == nil {
		assert.NotEqual(t, second.RequestID, r.in.RequestID, "the fleet's only node handed out by both replicas")
	} else {
		assert.ErrorIs(t, r.err, fleet.ErrNoIdle)
	}
}
