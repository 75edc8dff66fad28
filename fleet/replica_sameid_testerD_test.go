package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// createdRequests counts the distinct create requests (by label) the
// fakes ever saw for servers, and reports any request created twice.
func createdRequests(t *testing.T, e *env) int {
	t.Helper()
	seen := map[string]string{}
	for _, r := range append(e.vultr.Resources(), e.hot.Resources()...) {
		l, ok := fleet.ParseLabel(r.Label + r.Description)
		if !ok || r.Kind == "ssh_key" || r.Kind == "vpc" {
			continue
		}
		assert.Empty(t, seen[l.RequestID], "request %s created twice (%s and %s)", l.RequestID, seen[l.RequestID], r.ID)
		seen[l.RequestID] = r.ID
	}
	return len(seen)
}

// Two replicas started with the same ReplicaID by mistake (a copied
// config, a host name shared by two containers). Config.ReplicaID says
// "unique per process", but nothing checks it: the second one "acquires"
// the first one's leases with the same token (a renewal), both believe
// they hold every fleet, and their writes pass the fence. A user expects
// the mistake to be refused or reported, and at worst no money lost: a
// fleet of 2 nodes gets exactly 2 servers (issue 14 point 2: each fleet
// is reconciled by exactly one replica at a time; point 3: 0 instances
// created twice).
func TestTwoReplicasWithTheSameIDTesterD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		var ms []*fleet.Manager
		var stops []func()
		for range 2 {
			m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: "rp", Store: store,
				ReplicaID: "same", Policy: fleet.Policy{Release: fleet.ReleaseNow},
				OnEvent: func(ev fleet.Event) { e.mu.Lock(); e.events = append(e.events, ev); e.mu.Unlock() }})
			if err != nil {
				t.Logf("second replica with the same id refused: %v", err)
				continue
			}
			t.Cleanup(m.Close)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = m.Run(ctx) }()
			stops = append(stops, func() { cancel(); <-done })
			ms = append(ms, m)
		}
		require.NoError(t, ms[0].Apply(t.Context(), spec("same", 2, vultrVM("ewr"))))
		if len(ms) > 1 {
			require.NoError(t, ms[1].Apply(t.Context(), spec("sameh", 1, hotType("vm-mi300x-1"))))
		}
		time.Sleep(2 * time.Hour)
		assert.True(t, converged(t, store, map[string]int{"same": 2, "sameh": 1}), "converged")
		require.NoError(t, ms[0].Delete(t.Context(), "same"))
		require.NoError(t, ms[0].Delete(t.Context(), "sameh"))
		time.Sleep(3 * time.Hour)
		for _, stop := range stops {
			stop()
		}
		e.assertNothingLeft()
		assert.Equal(t, 3, createdRequests(t, e), "one server per node: nothing created twice, nothing replaced")
	})
}
