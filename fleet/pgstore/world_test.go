package pgstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/internal/steppedclock"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
)

// world is the two embedded clouds on one stepped clock.
type world struct {
	clock     *steppedclock.Clock
	v         *sim.Vultr
	h         *sim.HotAisle
	providers []fleet.Provider
}

func newWorld(tb testing.TB, hotVMs int) *world {
	clock := steppedclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	w := &world{clock: clock, v: sim.NewVultr(sim.WithClock(clock), sim.WithVultrRateLimit(0, 0)),
		h: sim.NewHotAisle(sim.WithClock(clock))}
	w.h.SetVMLimit(hotVMs)
	w.h.SetDeleteDelay(0)
	if err := w.h.SetQuantity("vm-mi300x-1", int64(hotVMs)); err != nil {
		tb.Fatal(err)
	}
	w.providers = []fleet.Provider{
		vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(w.v.Client()), vultr.WithRateLimit(1e9, 1<<30))),
		hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(w.h.Client()),
			hotaisle.WithRateLimit(1e9, 1<<30))),
	}
	return w
}

// manager returns a Manager on store; failed store writes are counted.
func (w *world) manager(tb testing.TB, store fleet.Store, storeFailures *atomic.Int64) *fleet.Manager {
	m, err := fleet.NewManager(fleet.Config{Providers: w.providers, Clock: w.clock, Store: store, Owner: "pgt",
		Policy: fleet.Policy{Release: fleet.ReleaseNow, Parallelism: 16},
		OnEvent: func(e fleet.Event) {
			if e.Type == fleet.EventStoreWriteFailed && e.Err != "" && storeFailures != nil {
				storeFailures.Add(1)
			}
		}})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// passes reconciles, 10 s of cloud time apart, until done says so; it
// returns the number of passes.
func (w *world) passes(tb testing.TB, m *fleet.Manager, done func() bool) int {
	for n := 1; n <= 2000; n++ {
		if err := m.Reconcile(context.Background()); err != nil {
			tb.Fatal(err)
		}
		w.clock.Advance(10 * time.Second)
		if done() {
			return n
		}
	}
	tb.Fatal("did not settle in 2000 passes")
	return 0
}

// servers counts the servers the clouds ever had (live: only live ones).
func (w *world) servers(live bool) int {
	n := 0
	for _, r := range append(w.v.Resources(), w.h.Resources()...) {
		if (r.Kind == "instance" || r.Kind == "virtual_machine") && (!live || r.Live()) {
			n++
		}
	}
	return n
}

// all reports whether fleet has n instances, all in status st.
func all(m *fleet.Manager, fleetName string, n int, st fleet.Status) bool {
	insts := m.Instances(fleetName)
	if len(insts) != n {
		return false
	}
	for _, i := range insts {
		if i.Status != st {
			return false
		}
	}
	return true
}

func vultrVMs() fleet.Requirements {
	return fleet.Requirements{Providers: []string{"vultr"}, Regions: []string{"ewr"}, InstanceTypes: []string{"vc2-1c-1gb"}}
}

func hotVMs() fleet.Requirements {
	return fleet.Requirements{Providers: []string{"hotaisle"}, InstanceTypes: []string{"vm-mi300x-1"}}
}
