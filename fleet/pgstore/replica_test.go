package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Three replicas on one PostgreSQL reconcile 20 fleets on both sims; one
// dies mid-way, another is paused past its lease and resumes. Leases run
// in real time (TTL 1 s); the clouds on a stepped clock. Every fleet
// converges, no create is made twice, nothing is left after the deletes.
func TestReplicasOnPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	w := newWorld(t, 100)
	var ms []*fleet.Manager
	for i := range 3 {
		s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
		require.NoError(t, err)
		t.Cleanup(s.Close)
		m, err := fleet.NewManager(fleet.Config{Providers: w.providers, Clock: w.clock, Store: s, Owner: "pgr",
			ReplicaID: fmt.Sprintf("r%d", i), Policy: fleet.Policy{Release: fleet.ReleaseNow, LeaseTTL: time.Second}})
		require.NoError(t, err)
		t.Cleanup(m.Close)
		ms = append(ms, m)
	}
	store := ms[0]
	want := map[string]int{}
	for i := range 20 {
		name := fmt.Sprintf("f%02d", i)
		req := vultrVMs()
		if i%2 == 1 {
			req = hotVMs()
		}
		want[name] = 1 + i%2
		require.NoError(t, ms[i%3].Apply(t.Context(), fleet.Spec{Name: name, Nodes: want[name], Requirements: req}))
	}
	alive := []bool{true, true, true}
	round := func() {
		for i, m := range ms {
			if alive[i] {
				require.NoError(t, m.Reconcile(context.Background()))
			}
		}
		w.clock.Advance(10 * time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	s0, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
	require.NoError(t, err)
	defer s0.Close()
	idle := func() bool {
		recs, err := s0.Instances(t.Context())
		require.NoError(t, err)
		n := map[string]int{}
		for _, r := range recs {
			if r.Instance.Status == fleet.StatusIdle && r.Termination == nil {
				n[r.Instance.Fleet]++
			}
		}
		for f, k := range want {
			if n[f] != k {
				return false
			}
		}
		return true
	}
	for range 15 {
		round()
	}
	alive[1] = false // dies: its leases run out in a second
	for range 15 {
		round()
	}
	alive[2] = false // paused past its lease...
	for start := time.Now(); time.Since(start) < 2*time.Second; {
		round()
	}
	alive[2] = true // ...and resumed: it must find its leases gone before acting
	start := time.Now()
	for !idle() {
		require.Less(t, time.Since(start), 60*time.Second, "not converged")
		round()
	}
	for f := range want {
		require.NoError(t, store.Delete(t.Context(), f))
	}
	for len(store.Fleets()) > 0 {
		require.Less(t, time.Since(start), 120*time.Second, "not deleted: %v", store.Fleets())
		round()
	}
	assert.Zero(t, w.servers(true), "nothing left")
	seen := map[string]bool{}
	for _, r := range append(w.v.Resources(), w.h.Resources()...) {
		if l, ok := fleet.ParseLabel(r.Label + r.Description); ok && r.Kind != "ssh_key" {
			assert.False(t, seen[l.RequestID], "request %s created twice", l.RequestID)
			seen[l.RequestID] = true
		}
	}
	assert.Len(t, seen, 30, "one server per node, nothing created twice")
}

// BenchmarkTakeover measures the wall time from a replica's last renewal
// to another replica holding all its fleets (LeaseTTL 1 s).
func BenchmarkTakeover(b *testing.B) {
	dsn := pgtest.DSN(b)
	for b.Loop() {
		schema := pgtest.Schema(b, dsn)
		w := newWorld(b, 10)
		var ms []*fleet.Manager
		var stores []*pgstore.Store
		for i := range 2 {
			s, err := pgstore.Open(context.Background(), dsn, pgstore.WithSchema(schema))
			require.NoError(b, err)
			stores = append(stores, s)
			m, err := fleet.NewManager(fleet.Config{Providers: w.providers, Clock: w.clock, Store: s, Owner: "pgb",
				ReplicaID: fmt.Sprintf("b%d", i), Policy: fleet.Policy{LeaseTTL: time.Second}})
			require.NoError(b, err)
			ms = append(ms, m)
		}
		for i := range 10 {
			require.NoError(b, ms[0].Apply(context.Background(), fleet.Spec{Name: fmt.Sprintf("t%d", i), Nodes: 0}))
		}
		holders := func() map[string]int {
			ls, err := stores[0].Leases(context.Background())
			require.NoError(b, err)
			n := map[string]int{}
			for _, l := range ls {
				if len(l.Name) > 6 && l.Name[:6] == "fleet/" {
					n[l.Holder]++
				}
			}
			return n
		}
		for holders()["b0"] == 0 || holders()["b1"] == 0 { // both hold some
			for _, m := range ms {
				require.NoError(b, m.Reconcile(context.Background()))
			}
			time.Sleep(10 * time.Millisecond)
		}
		died := time.Now() // b1 stops renewing
		for holders()["b0"] < 10 {
			require.NoError(b, ms[0].Reconcile(context.Background()))
			time.Sleep(10 * time.Millisecond)
		}
		b.ReportMetric(time.Since(died).Seconds(), "takeover-s")
		for i := range ms {
			ms[i].Close()
			stores[i].Close()
		}
	}
}
