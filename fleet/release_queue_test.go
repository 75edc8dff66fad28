package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 17 (tester AJ) on Hot Aisle ("minimum end minus a minute") with
// a small Policy.Parallelism: 1 or 2 (one provider call at a
// time besides creates, lists and agent starts). A fleet of 10 VMs (1x
// MI300X, 30-minute minimum; the team's default limit) made by one Apply
// and never used: each is released at 29:00, forced (the minimum is
// charged whole either way). A Hot Aisle VM DELETE blocks ~20 s while the
// VM is reset, and the deletes wait for Parallelism, so only a few land
// in the minute before the minimum's end: the later ones land after 30:00
// and each buys minutes past the minimum that a forced release started
// earlier (free inside the minimum) would have saved.
//
// Deletes due at their last safe moment (boundary-critical) now go beyond
// Parallelism.
//
// Expected (per minute, minimum 30): every VM billed 30 min ($1.495 at
// 299 cents/h). Measured before the fix: with 10 VMs and Parallelism 1, 4
// VMs billed 31, 31, 31 and 32 min (released 30:19 to 31:20 after their
// start), 5 minutes ($0.25) paid for nothing.
func TestHotAisleDeletesDueAtTheMinimumDoNotQueueBehindParallelism(t *testing.T) {
	for _, c := range []struct {
		nodes, parallelism, creates int // creates: Policy.MaxConcurrentCreates (0: the default 4)
	}{{10, 1, 0}, {20, 1, 0}, {10, 2, 0}, {20, 2, 0}, {10, 1, 10}, {20, 2, 20}} {
		t.Run(fmt.Sprintf("%d VMs, Parallelism %d, MaxConcurrentCreates %d", c.nodes, c.parallelism, c.creates), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := sim.NewHotAisle(sim.WithHotAisleLimits(c.nodes, 1), sim.WithHotAisleBalance(1<<40))
				// Stock for all of them at once (the default is 8): an idle
				// release does not replace a node the fleet never got.
				require.NoError(t, h.SetQuantity("vm-mi300x-1", int64(c.nodes)))
				hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
				m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{hp}, Store: fleet.NewMemoryStore(), Owner: "q",
					Policy: fleet.Policy{Parallelism: c.parallelism, MaxConcurrentCreates: c.creates}})
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- m.Run(ctx) }()
				require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: c.nodes, IdleTimeout: time.Minute, Requirements: hotType("vm-mi300x-1")}))
				for limit := time.Now().Add(3 * time.Hour); time.Now().Before(limit); time.Sleep(10 * time.Second) {
					if live(h.Resources(), "virtual_machine") == 0 && len(h.Ledger().Charges) == c.nodes {
						break
					}
				}
				cancel()
				<-done
				m.Close()
				time.Sleep(time.Minute) // a VM DELETE blocks 20 s in the fake
				charges := h.Ledger().Charges
				require.Len(t, charges, c.nodes)
				over, extra, longest := 0, 0.0, time.Duration(0)
				var desc []string
				for _, ch := range charges {
					assert.False(t, ch.Live, "still billing")
					longest = max(longest, ch.To.Sub(ch.From))
					if ch.Billed > 30*time.Minute {
						over++
						extra += ch.USD - ch.RateUSD/2
						desc = append(desc, fmt.Sprintf("%s %v", ch.ResourceID, ch.To.Sub(ch.From).Round(time.Second)))
					}
				}
				t.Logf("%d VMs billed past the minimum; the last released %v after its start", over, longest.Round(time.Second))
				assert.Zero(t, over, "VMs billed past their 30-minute minimum, $%.2f more (released after, from the billing start): %v", extra, desc)
			})
		})
	}
}
