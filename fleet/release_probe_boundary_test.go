package fleet_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ten Hot Aisle VMs (30-minute minimum) of one Apply, never used, released
// at 29:00 (the minimum's end less MinuteReleaseMargin), forced. Hot
// Aisle's VM DELETE answers 500 from 28:55 to 29:45: the first attempts
// all fail, and the kind is "down", so one delete at a time probes it. The
// probe planned 10 s before the boundary is accepted (its billing ends),
// but the call blocks ~20 s while the VM is reset; the other nine wait for
// its answer, and start after 30:00: each is billed a minute past the
// minimum that a delete started with the probe would have saved.
//
// (tester BF: before the fix, 5 of 5 runs: one VM released 29:45 after its
// billing start, nine 30:04 to 30:05, billed 31 min: $0.45 more; every
// delete of a down kind waited while one was under way, even in its last
// retry pace before the minimum's end.)
func TestHotAisleProbeDeleteLetsTheLastPaceGo(t *testing.T) {
	const nodes = 10
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle(sim.WithHotAisleLimits(nodes, 1), sim.WithHotAisleBalance(1<<40))
		require.NoError(t, h.SetQuantity("vm-mi300x-1", nodes))
		hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
		m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{hp}, Store: fleet.NewMemoryStore(), Owner: "bf",
			Policy: fleet.Policy{RebuyHoldOff: true}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		t0 := time.Now()
		require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: nodes, IdleTimeout: time.Minute, Requirements: hotType("vm-mi300x-1")}))
		time.Sleep(time.Until(t0.Add(28*time.Minute + 55*time.Second)))
		require.NoError(t, h.Inject(sim.Fault{Route: hotDeleteRoute, Status: http.StatusInternalServerError, Duration: 50 * time.Second}))
		for limit := time.Now().Add(3 * time.Hour); time.Now().Before(limit); time.Sleep(10 * time.Second) {
			if live(h.Resources(), "virtual_machine") == 0 && len(h.Ledger().Charges) == nodes {
				break
			}
		}
		cancel()
		<-done
		m.Close()
		time.Sleep(time.Minute)
		charges := h.Ledger().Charges
		require.Len(t, charges, nodes)
		over, extra := 0, 0.0
		var desc []string
		for _, ch := range charges {
			assert.False(t, ch.Live, "still billing")
			desc = append(desc, fmt.Sprintf("%v", ch.To.Sub(ch.From).Round(time.Second)))
			if ch.Billed > 30*time.Minute {
				over++
				extra += ch.USD - ch.RateUSD/2
			}
		}
		t.Logf("released after (from each billing start): %v", desc)
		assert.Zero(t, over, "%d VMs billed past their 30-minute minimum, $%.2f more: %v", over, extra, desc)
	})
}

// The same on Vultr, where a DELETE answers at once but the API is slow
// (8 s a call) while it recovers: ten Cloud GPU VMs of one Apply, idle,
// released at 57:00 of their first hour; every DELETE answers 500 until
// 59:40. The kind is down: one delete probes it at 59:50 (10 s before the
// hour ends), and before the fix the nine others started only when its answer came back
// (59:58) and land after the hour's end: each buys a second hour. Started
// with the probe, they would land at 59:58.
//
// (tester BF: before the fix, 5 of 5 runs: one VM released 59:54 after its
// billing start, nine 1:00:02 to 1:00:03: $21.54 more.)
func TestVultrProbeDeleteLetsTheLastPaceGo(t *testing.T) {
	const nodes = 10
	synctest.Test(t, func(t *testing.T) {
		v := sim.NewVultr()
		vp := vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client())))
		m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{vp}, Store: fleet.NewMemoryStore(), Owner: "bf"})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		t0 := time.Now()
		require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: nodes, IdleTimeout: time.Minute,
			Requirements: vultrType("vcg-a100-12c-120g-80vram")}))
		for len(servers(v.Ledger().Charges)) < nodes {
			require.True(t, time.Since(t0) < 10*time.Minute, "not all created")
			time.Sleep(time.Second)
		}
		var last time.Time
		for _, c := range servers(v.Ledger().Charges) {
			last = maxT(last, c.From)
		}
		require.Less(t, last.Sub(t0), 2*time.Minute, "created too far apart")
		time.Sleep(time.Until(t0.Add(56*time.Minute + 50*time.Second)))
		require.NoError(t, v.Inject(sim.Fault{Route: vultrDeleteRoute, Latency: 8 * time.Second}))
		require.NoError(t, v.Inject(sim.Fault{Route: vultrDeleteRoute, Status: http.StatusInternalServerError,
			Duration: time.Until(t0.Add(59*time.Minute + 40*time.Second))}))
		for limit := time.Now().Add(4 * time.Hour); time.Now().Before(limit); time.Sleep(10 * time.Second) {
			liveN := 0
			for _, c := range servers(v.Ledger().Charges) {
				if c.Live {
					liveN++
				}
			}
			if liveN == 0 {
				break
			}
		}
		cancel()
		<-done
		m.Close()
		time.Sleep(time.Minute)
		over, extra := 0, 0.0
		var desc []string
		for _, ch := range servers(v.Ledger().Charges) {
			assert.False(t, ch.Live, "still billing")
			desc = append(desc, fmt.Sprintf("%v", ch.To.Sub(ch.From).Round(time.Second)))
			if ch.Billed > time.Hour {
				over++
				extra += ch.USD - ch.RateUSD
			}
		}
		t.Logf("released after (from each billing start): %v", desc)
		assert.Zero(t, over, "%d VMs billed a second hour, $%.2f more: %v", over, extra, desc)
	})
}
