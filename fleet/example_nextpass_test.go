package fleet_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/internal/steppedclock"
	"github.com/gpufleet/gpufleet/sim"
)

// A loop of one's own around Reconcile, with an hour between passes at
// most: after each pass it waits until NextPass (here it moves the stepped
// clock there), so an idle Hot Aisle VM is released at its 30-minute
// minimum's last safe moment and billed the minimum only. Waiting the hour
// instead would bill it an hour.
func ExampleManager_NextPass() {
	ctx := context.Background()
	clock := steppedclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	hs := sim.NewHotAisle(sim.WithClock(clock))
	hc := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(hs.Client()), hotaisle.WithRateLimit(0, 0))
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{hotaisle.NewProvider(hc)}, Clock: clock, Interval: time.Hour})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	err = m.Apply(ctx, fleet.Spec{Name: "infer", Nodes: 1, IdleTimeout: 5 * time.Minute,
		Requirements: fleet.Requirements{Providers: []string{fleet.ProviderHotAisle}, InstanceTypes: []string{"vm-mi300x-1"}}})
	if err != nil {
		panic(err)
	}
	billing := func() bool { l := hs.Ledger().Charges; return len(l) == 0 || l[0].Live }
	for end := clock.Now().Add(3 * time.Hour); billing() && clock.Now().Before(end); {
		if err := m.Reconcile(ctx); err != nil {
			panic(err)
		}
		clock.Advance(m.NextPass().Sub(clock.Now()))
	}
	c := hs.Ledger().Charges[0]
	fmt.Println("billed:", c.Billed, "still billing:", c.Live)
	// Output:
	// billed: 30m0s still billing: false
}
