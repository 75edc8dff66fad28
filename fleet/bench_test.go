package fleet_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/internal/steppedclock"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
)

// BenchmarkManager1000Instances runs a whole lifecycle of 1,000 instances
// (500 Vultr VMs, 500 Hot Aisle VMs) through one Manager: provision, wait
// for ready, release, confirm gone. Cloud time is stepped 10 s per pass; no
// agent. Reports API calls per instance and the Manager's heap per tracked
// instance.
func BenchmarkManager1000Instances(b *testing.B) {
	var calls, bytesPer float64
	for b.Loop() {
		c, bp := manager1000(b)
		calls += c
		bytesPer += bp
	}
	b.ReportMetric(calls/float64(b.N), "api-calls/instance")
	b.ReportMetric(bytesPer/float64(b.N), "heap-B/instance")
}

// BenchmarkManager10000Instances is the same lifecycle with 10,000
// instances (5,000 per provider).
func BenchmarkManager10000Instances(b *testing.B) {
	var calls, bytesPer float64
	for b.Loop() {
		c, bp := managerN(b, 5000)
		calls += c
		bytesPer += bp
	}
	b.ReportMetric(calls/float64(b.N), "api-calls/instance")
	b.ReportMetric(bytesPer/float64(b.N), "heap-B/instance")
}

func manager1000(b *testing.B) (callsPerInstance, heapPerInstance float64) { return managerN(b, 500) }

func managerN(b *testing.B, per int) (callsPerInstance, heapPerInstance float64) {
	ctx := context.Background()
	clock := steppedclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	v := sim.NewVultr(sim.WithClock(clock), sim.WithVultrRateLimit(0, 0))
	h := sim.NewHotAisle(sim.WithClock(clock))
	h.SetVMLimit(2 * per)
	h.SetDeleteDelay(0)
	if err := h.SetQuantity("vm-mi300x-1", int64(2*per)); err != nil {
		b.Fatal(err)
	}
	vp := vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client()), vultr.WithRateLimit(1e9, 1<<30)))
	hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client()),
		hotaisle.WithRateLimit(1e9, 1<<30)))
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{vp, hp}, Clock: clock,
		Policy: fleet.Policy{Release: fleet.ReleaseNow, Parallelism: 64, MaxConcurrentCreates: 64}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for name, r := range map[string]fleet.Requirements{"v": vultrVM("ewr"), "h": hotType("vm-mi300x-1")} {
		if err := m.Apply(ctx, fleet.Spec{Name: name, Nodes: per, Requirements: r}); err != nil {
			b.Fatal(err)
		}
	}
	pass := func(until func() bool) {
		for range 20000 {
			if err := m.Reconcile(ctx); err != nil {
				b.Fatal(err)
			}
			clock.Advance(10 * time.Second)
			if until() {
				return
			}
		}
		b.Fatal("did not settle")
	}
	idle := func(name string) bool {
		insts := m.Instances(name)
		if len(insts) != per {
			return false
		}
		for _, i := range insts {
			if i.Status != fleet.StatusIdle {
				return false
			}
		}
		return true
	}
	pass(func() bool { return idle("v") && idle("h") })
	b.StopTimer()
	var during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&during)
	b.StartTimer()
	for _, name := range []string{"v", "h"} {
		if err := m.Delete(ctx, name); err != nil {
			b.Fatal(err)
		}
	}
	pass(func() bool { return len(m.Fleets()) == 0 })
	total := len(v.Calls()) + len(h.Calls())
	n := float64(2 * per)
	return float64(total) / n, float64(during.HeapAlloc-before.HeapAlloc) / n
}
