package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/require"
)

// startReplicas starts n replicas (r0, r1, ...) of owner "ap" on one
// MemoryLeaseStore with policy pol (the default release policy unless pol
// says), both clouds, their events in e's log.
func startReplicas(t *testing.T, e *env, pol fleet.Policy, n int) *replicaSet {
	t.Helper()
	store := fleet.NewMemoryLeaseStore(nil)
	rs := &replicaSet{e: e, store: store}
	for i := range n {
		m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: "ap", Store: store,
			ReplicaID: fmt.Sprintf("r%d", i), Policy: pol,
			OnEvent: func(ev fleet.Event) { e.mu.Lock(); e.events = append(e.events, ev); e.mu.Unlock() }})
		require.NoError(t, err)
		t.Cleanup(m.Close)
		rs.ms = append(rs.ms, m)
		rs.cancels = append(rs.cancels, nil)
		rs.dones = append(rs.dones, nil)
		rs.start(i)
	}
	return rs
}

// onlyCharge is the one server charge of the fakes' ledgers.
func onlyCharge(t *testing.T, e *env) sim.Charge {
	t.Helper()
	cs := servers(append(e.vultr.Ledger().Charges, e.hot.Ledger().Charges...))
	require.Len(t, cs, 1, "one server rented")
	return cs[0]
}

// convergeReplicas applies s through replica 0 and waits until its nodes
// are idle by the store; it returns the holder's index.
func convergeReplicas(t *testing.T, rs *replicaSet, s fleet.Spec) int {
	t.Helper()
	require.NoError(t, rs.ms[0].Apply(t.Context(), s))
	for deadline := time.Now().Add(2 * time.Hour); !converged(t, rs.store, map[string]int{s.Name: s.Nodes}); time.Sleep(5 * time.Second) {
		require.True(t, time.Now().Before(deadline), "not converged")
	}
	h := rs.holderOf(t, s.Name)
	require.GreaterOrEqual(t, h, 0, "someone holds the fleet")
	return h
}

// logInstanceEvents logs the lease handovers and the instance events of
// e's log, timed from from.
func logInstanceEvents(t *testing.T, e *env, from time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.events {
		if ev.Type == fleet.EventFleetTaken || ev.Type == fleet.EventFleetReleased || ev.InstanceID != "" {
			t.Logf("%v %s %s %s %s %s", ev.Time.Sub(from).Round(time.Second), ev.Type, ev.Fleet, ev.InstanceID, ev.Message, ev.Err)
		}
	}
}
