package hotaisle_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
)

// BenchmarkProviderCreateVM creates one VM per iteration through the
// Provider, on a fake team that already has `team` VMs, after one List (what
// the Manager does). A create is a provision and a label write whatever the
// team's size: the calls per create, read from the fake's call log, stay 2,
// and the time per create does not grow with the team, so N creates cost
// O(N) calls and time. (Before, every create listed the whole team first.)
func BenchmarkProviderCreateVM(b *testing.B) {
	for _, team := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("team=%d", team), func(b *testing.B) {
			h, p, o := benchTeam(b, team)
			before := len(h.Calls())
			ctx := context.Background()
			n := 0
			for b.Loop() {
				inst, err := p.Create(ctx, fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "bench", RequestID: fmt.Sprintf("%012x", n)}})
				if err != nil || inst.ID == "" || inst.LabelError != "" {
					b.Fatal(err, inst.LabelError)
				}
				n++
			}
			calls := h.Calls()[before:]
			lists := 0
			for _, c := range calls {
				if c.Route == routeListVMs {
					lists++
				}
			}
			b.ReportMetric(float64(len(calls))/float64(n), "calls/create")
			b.ReportMetric(float64(lists)/float64(n), "lists/create")
		})
	}
}

// benchTeam returns a fake Hot Aisle whose team has n VMs, a Provider that
// has listed them, and a 1-GPU offer with stock for any benchmark run.
func benchTeam(b *testing.B, n int) (*sim.HotAisle, *hotaisle.Provider, fleet.Offer) {
	b.Helper()
	const stock = 1 << 20
	h := sim.NewHotAisle()
	h.SetVMLimit(stock)
	h.SetBalance(1 << 50)
	c := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client()), hotaisle.WithRateLimit(0, 0))
	p := hotaisle.NewProvider(c)
	ctx := context.Background()
	offers, err := p.Offers(ctx)
	if err != nil {
		b.Fatal(err)
	}
	o := fleet.Filter(offers, fleet.Requirements{GPUCount: 1})[0]
	if err := h.SetQuantity(o.InstanceType, stock); err != nil {
		b.Fatal(err)
	}
	for range n {
		if _, err := c.ProvisionVM(ctx, hotaisle.VMProvisionRequest{VMSpecs: o.ProviderData.(hotaisle.VMSpecs)}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := p.List(ctx); err != nil {
		b.Fatal(err)
	}
	return h, p, o
}
