package fleet_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/internal/steppedclock"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
)

// benchClock is a stepped clock (cloud time moved by hand while the fleet
// converges) that also runs with the process clock, and sleeps for real
// (Run waits between steps instead of spinning).
type benchClock struct {
	*steppedclock.Clock
	start time.Time
}

func (c benchClock) Now() time.Time { return c.Clock.Now().Add(time.Since(c.start)) }

func (c benchClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// BenchmarkIntentLatency measures, on the Manager holding the
// fleet, the wall time from MarkBusy's return to the loop carrying it out
// (EventInstanceBusy), and the same for MarkIdle: one op is a busy+idle
// round trip. "single" is one Manager; "replica" is a replica (ReplicaID)
// over a MemoryLeaseStore, where each intent is stored, read back from the
// store and only then carried out.
func BenchmarkIntentLatency(b *testing.B) {
	for _, mode := range []string{"single", "replica"} {
		b.Run(mode, func(b *testing.B) { intentLatency(b, mode == "replica") })
	}
}

func intentLatency(b *testing.B, replica bool) {
	ctx := context.Background()
	clock := steppedclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	v := sim.NewVultr(sim.WithClock(clock), sim.WithVultrRateLimit(0, 0))
	vp := vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client()), vultr.WithRateLimit(1e9, 1<<30)))
	events := make(chan fleet.EventType, 64)
	var watching sync.Mutex
	on := false
	cfg := fleet.Config{Providers: []fleet.Provider{vp}, Clock: benchClock{clock, time.Now()}, Owner: "bj", Interval: time.Minute,
		Policy: fleet.Policy{Release: fleet.ReleaseNow},
		OnEvent: func(ev fleet.Event) {
			watching.Lock()
			defer watching.Unlock()
			if on && (ev.Type == fleet.EventInstanceBusy || ev.Type == fleet.EventInstanceIdle) {
				events <- ev.Type
			}
		}}
	store := fleet.NewMemoryLeaseStore(nil)
	if replica {
		cfg.Store, cfg.ReplicaID = store, "r0"
	}
	m, err := fleet.NewManager(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	if err := m.Apply(ctx, fleet.Spec{Name: "lat", Nodes: 1, Requirements: vultrVM("ewr")}); err != nil {
		b.Fatal(err)
	}
	for i := 0; ; i++ {
		if err := m.Reconcile(ctx); err != nil {
			b.Fatal(err)
		}
		clock.Advance(10 * time.Second)
		if in := m.Instances("lat"); len(in) == 1 && in[0].Status == fleet.StatusIdle {
			break
		}
		if i > 2000 {
			b.Fatal("did not settle")
		}
	}
	id := m.Instances("lat")[0].ID
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(rctx) }()
	defer func() { cancel(); <-done }()
	watching.Lock()
	on = true
	watching.Unlock()
	wait := func(want fleet.EventType) {
		for {
			select {
			case got := <-events:
				if got == want {
					return
				}
			case <-time.After(10 * time.Second):
				b.Fatalf("no %s within 10 s", want)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := m.MarkBusy(id); err != nil {
			b.Fatal(err)
		}
		wait(fleet.EventInstanceBusy)
		if err := m.MarkIdle(id); err != nil {
			b.Fatal(err)
		}
		wait(fleet.EventInstanceIdle)
	}
	b.StopTimer()
	pending, _ := store.Intents(ctx, "lat")
	b.ReportMetric(float64(len(pending)), "pending-intents")
}
