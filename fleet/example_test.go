package fleet_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/internal/steppedclock"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
)

// The README's fleet, on the simulator: two 8x MI300X Vultr bare-metal
// servers in one VPC, watched until idle, then deleted. Cloud time is moved
// by hand here; in tests use a testing/synctest bubble, in production Run.
func ExampleManager() {
	ctx := context.Background()
	clock := steppedclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	vs, hs := sim.NewVultr(sim.WithClock(clock)), sim.NewHotAisle(sim.WithClock(clock))
	// The clients' rate limiters run on the wall clock: off here, where cloud
	// time is stepped by hand.
	vc := vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(vs.Client()), vultr.WithRateLimit(0, 0))
	hc := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(hs.Client()), hotaisle.WithRateLimit(0, 0))
	m, err := fleet.NewManager(fleet.Config{
		Providers: []fleet.Provider{vultr.NewProvider(vc), hotaisle.NewProvider(hc)},
		Clock:     clock,
		Policy:    fleet.Policy{Release: fleet.ReleaseNow},
	})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	err = m.Apply(ctx, fleet.Spec{
		Name: "train", Nodes: 2, Placement: fleet.PlacementCluster, IdleTimeout: 30 * time.Minute,
		Requirements: fleet.Requirements{GPUModel: "MI300X", GPUCount: 8, MaxPricePerHour: 30},
	})
	if err != nil {
		panic(err)
	}
	settle := func(done func() bool) {
		for !done() {
			if err := m.Reconcile(ctx); err != nil {
				panic(err)
			}
			clock.Advance(10 * time.Second)
		}
	}
	settle(func() bool {
		insts := m.Instances("train")
		for _, i := range insts {
			if i.Status != fleet.StatusIdle || i.VPCID == "" {
				return false
			}
		}
		return len(insts) == 2
	})
	for _, inst := range m.Instances("train") {
		fmt.Println(inst.Offer.InstanceType, inst.Status, inst.VPCID != "")
	}
	if err := m.Delete(ctx, "train"); err != nil {
		panic(err)
	}
	settle(func() bool { return len(m.Fleets()) == 0 })
	live := 0
	for _, r := range vs.Resources() {
		if r.Live() {
			live++
		}
	}
	fmt.Printf("left at Vultr: %d; billed: $%.2f\n", live, vs.Ledger().TotalUSD)
	// Output:
	// vbm-256c-2048gb-8-mi300x-gpu idle true
	// vbm-256c-2048gb-8-mi300x-gpu idle true
	// left at Vultr: 0; billed: $35.04
}
