package fleet_test

import (
	"context"
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

// Vultr bills hourly with a monthly cap (the sim's ledger: every started
// hour counts in the calendar month it starts in, a month costs at most
// monthly_cost; 730 h of a Cloud GPU). A node busy from 1 January 00:00
// for 731 hours has paid its month: keeping it idle to the last hour that
// starts in January costs nothing. A second job at 31 January 16:00 (4 h)
// then runs on it for free. Released at the hour's last safe moment after
// its job, the node is gone and the job buys a new one (and waits for its
// boot).
//
// (tester BF: before the fix, the first VM was released 31 January 11:57
// (732 h, $1750.00, the cap); the 4-h job waited 1m50s for a second VM
// billed 5 h, $11.99: fleet.Offer carried no monthly cap, so idleReleaseAt
// and keepCost priced every next hour at PricePerHour.)
func TestVultrIdleNodePastItsMonthlyCapIsKeptToTheMonthsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, m, ctx, stop := monthCapWorld(t)
		defer stop()
		t0 := time.Now()
		require.Equal(t, time.January, t0.UTC().Month())
		s := fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: 10 * time.Minute, Requirements: vultrType("vcg-a100-12c-120g-80vram")}
		require.NoError(t, m.Apply(ctx, s))
		var first fleet.Instance
		var err error
		for end := time.Now().Add(time.Hour); ; time.Sleep(10 * time.Second) {
			if first, err = m.Acquire(ctx, "f"); err == nil {
				break
			}
			require.True(t, time.Now().Before(end), "no node")
		}
		time.Sleep(time.Until(t0.Add(731*time.Hour + 30*time.Minute)))
		require.NoError(t, m.MarkIdle(first.ID))
		time.Sleep(time.Until(t0.Add(736 * time.Hour))) // 31 January 16:00
		asked := time.Now()
		second, err := m.Acquire(ctx, "f")
		if err != nil {
			require.NoError(t, m.Apply(ctx, s)) // the orchestrator grows the fleet back for its job
		}
		for end := time.Now().Add(time.Hour); err != nil; time.Sleep(10 * time.Second) {
			if second, err = m.Acquire(ctx, "f"); err == nil {
				break
			}
			require.True(t, time.Now().Before(end), "no node for the second job")
		}
		waited := time.Since(asked)
		assert.Equal(t, first.ID, second.ID, "the second job runs on the capped node (waited %v)", waited.Round(time.Second))
		time.Sleep(4 * time.Hour)
		require.NoError(t, m.MarkIdle(second.ID))
		time.Sleep(6 * time.Hour)
		var usd float64
		var servers []sim.Charge
		for _, c := range v.Ledger().Charges {
			if c.Kind == "ssh_key" {
				continue
			}
			servers = append(servers, c)
			usd += c.USD
			t.Logf("%s %s billed %v $%.2f to +%v live=%v", c.ResourceID, c.Plan, c.Billed, c.USD, c.To.Sub(t0), c.Live)
		}
		first0 := 1750.0 // the month's cap: 730 h at 2.397 USD/h
		assert.Len(t, servers, 1, "a second VM bought for the 4-h job on 31 January (waited %v): $%.2f more than the capped node kept idle", waited.Round(time.Second), usd-first0)
		assert.InDelta(t, first0, usd, 0.01, "billed $%.2f, the capped node alone $%.2f", usd, first0)
	})
}

// The same cap in a scale-down: a fleet of two Cloud GPU VMs on 31
// January, A busy since 1 January 00:00 (its month paid: 730 h), B bought
// at 11:10 for a burst; both idle at 11:30, IdleTimeout 0 (never by
// idleness). At 11:40 the orchestrator lowers Nodes to 1: keeping A to the
// month's end is free (keepCost 0), keeping B buys its hours, so shrink
// releases B (its first hour only) and keeps A. At 23:00 it lowers Nodes
// to 0: A goes before its first February hour.
// (tester BF: before the fix, A was released at 11:57 and B kept to 23:07,
// billed 12 h: $1778.76, $26.36 more.)
func TestVultrScaleDownReleasesTheNodeBelowItsMonthlyCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, m, ctx, stop := monthCapWorld(t)
		defer stop()
		t0 := time.Now()
		acquire := func() fleet.Instance {
			for end := time.Now().Add(time.Hour); ; time.Sleep(10 * time.Second) {
				x, err := m.Acquire(ctx, "f")
				if err == nil {
					return x
				}
				require.True(t, time.Now().Before(end), "no node")
			}
		}
		s := fleet.Spec{Name: "f", Nodes: 1, Requirements: vultrType("vcg-a100-12c-120g-80vram")}
		require.NoError(t, m.Apply(ctx, s))
		a := acquire()
		time.Sleep(time.Until(t0.Add(731*time.Hour + 10*time.Minute)))
		s.Nodes = 2
		require.NoError(t, m.Apply(ctx, s))
		b := acquire()
		time.Sleep(time.Until(t0.Add(731*time.Hour + 30*time.Minute)))
		require.NoError(t, m.MarkIdle(a.ID))
		require.NoError(t, m.MarkIdle(b.ID))
		time.Sleep(10 * time.Minute)
		s.Nodes = 1
		require.NoError(t, m.Apply(ctx, s))
		time.Sleep(time.Until(t0.Add(743 * time.Hour)))
		s.Nodes = 0
		require.NoError(t, m.Apply(ctx, s))
		time.Sleep(3 * time.Hour)
		var usd float64
		billed := map[string]sim.Charge{}
		for _, c := range v.Ledger().Charges {
			if c.Kind == "ssh_key" {
				continue
			}
			billed[c.ResourceID] = c
			usd += c.USD
			t.Logf("%s billed %v $%.2f to +%v live=%v", c.ResourceID, c.Billed, c.USD, c.To.Sub(t0), c.Live)
		}
		require.Len(t, billed, 2)
		assert.False(t, billed[a.ID].Live || billed[b.ID].Live, "still billing")
		want := 1750 + 2.397 // A kept free to the month's end, B its first hour
		assert.LessOrEqual(t, usd, want+0.01, "billed $%.2f: the capped VM released (to +%v), the new one kept to +%v ($%.2f more)",
			usd, billed[a.ID].To.Sub(t0), billed[b.ID].To.Sub(t0), usd-want)
	})
}

// monthCapWorld is a Manager running on both sims (a 10-minute pass) for
// the month-long cases; stop ends it and lets its goroutines finish.
func monthCapWorld(t *testing.T) (*sim.Vultr, *fleet.Manager, context.Context, func()) {
	v, h := sim.NewVultr(), sim.NewHotAisle()
	vp := vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client())))
	hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{vp, hp}, Owner: "bf", Interval: 10 * time.Minute})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return v, m, ctx, func() { cancel(); <-done; m.Close(); time.Sleep(5 * time.Minute) }
}
