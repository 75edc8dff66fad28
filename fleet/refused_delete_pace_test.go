package fleet_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Hot Aisle key that loses the right to delete (403) while 3 idle VMs
// are released past their minimum: a refusal of the account does not pass
// by itself, so the deletes back off (up to 10 minutes) instead of the
// 30-second pace kept for failures that pass (5xx, 429, timeouts) — at
// most 20 deletes per node in the hour from 35:00 to 95:00 (tester AK:
// 120 per node).
func TestDeletesRefusedByTheAccountPastTheMinimumBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle()
		hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
		m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{hp}, Store: fleet.NewMemoryStore(), Owner: "ak"})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		const nodes = 3
		require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: nodes, IdleTimeout: time.Minute, Requirements: hotType("vm-mi300x-1")}))
		for len(h.Ledger().Charges) < nodes {
			time.Sleep(time.Second)
		}
		from := h.Ledger().Charges[0].From
		time.Sleep(time.Until(from.Add(20 * time.Minute)))
		require.NoError(t, h.Inject(sim.Fault{Route: hotDeleteRoute, Status: http.StatusForbidden,
			Message: "You do not have permission to perform this action.", Duration: 2 * time.Hour}))
		time.Sleep(time.Until(from.Add(95 * time.Minute)))
		cancel()
		<-done
		m.Close()
		deletes := 0
		for _, c := range h.Calls() {
			if c.Route == hotDeleteRoute && !c.Time.Before(from.Add(35*time.Minute)) && c.Time.Before(from.Add(95*time.Minute)) {
				deletes++
			}
		}
		var billed time.Duration
		for _, c := range h.Ledger().Charges {
			billed += c.Billed
		}
		assert.LessOrEqual(t, deletes, 20*nodes, "DELETEs refused with 403 in one hour past the minimum (%d nodes; %v billed so far)", nodes, billed)
	})
}
