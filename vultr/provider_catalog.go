package vultr

import (
	"context"

	"github.com/gpufleet/gpufleet/fleet"
)

// Vultr instance and bare-metal objects carry no price, minimum reservation
// or billing granularity: only the plan rows (GET /v2/plans, /v2/plans-metal)
// do. The Provider keeps the plan rows of its last Offers call (or of the
// fetch List makes while it has none) and fills the Offer of the instances it
// returns from them: the offer Offers builds for that plan and region, with
// Available false (no availability call is made for an existing server). So
// an instance adopted after a lost Store has its price and its 1 h minimum,
// without which the Manager computes no reservation window.

// cachePlans records the VM plan rows by id, replacing earlier ones.
func (p *Provider) cachePlans(rows []Plan) {
	m := make(map[string]Plan, len(rows))
	for _, r := range rows {
		m[r.ID] = r
	}
	p.mu.Lock()
	p.plans = m
	p.mu.Unlock()
}

// cacheMetalPlans records the bare-metal plan rows by id, replacing earlier ones.
func (p *Provider) cacheMetalPlans(rows []MetalPlan) {
	m := make(map[string]MetalPlan, len(rows))
	for _, r := range rows {
		m[r.ID] = r
	}
	p.mu.Lock()
	p.metalPlans = m
	p.mu.Unlock()
}

// fillOffer replaces a bare offer (one without price, minimum reservation
// and billing granularity, as built from a server object) by the offer of its
// plan and region built from the cached plan row, when there is one. An
// offer that has any of the three is left alone (Create's, from Offers).
func (p *Provider) fillOffer(o *fleet.Offer) {
	if o.PricePerHour != 0 || o.MinimumReservation != 0 || o.BillingGranularity != 0 {
		return
	}
	p.mu.Lock()
	vm, okVM := p.plans[o.InstanceType]
	bm, okBM := p.metalPlans[o.InstanceType]
	p.mu.Unlock()
	switch {
	case o.BareMetal && okBM:
		*o = metalOffer(bm, o.Region, false)
	case !o.BareMetal && okVM:
		*o = planOffer(vm, o.Region, false)
	}
}

// loadPlans fills the cache for List, at most one fetch per kind and List:
// GET /v2/plans?type=all when a VM was listed and no VM plans are cached
// (from Offers or an earlier List), GET /v2/plans-metal likewise for bare
// metal. Both are public calls; errors are ignored (the instances keep their
// bare offer) and the next List tries again.
func (p *Provider) loadPlans(ctx context.Context, insts []fleet.Instance) {
	var needVM, needBM bool
	for _, in := range insts {
		needVM = needVM || !in.Offer.BareMetal
		needBM = needBM || in.Offer.BareMetal
	}
	p.mu.Lock()
	needVM = needVM && p.plans == nil
	needBM = needBM && p.metalPlans == nil
	p.mu.Unlock()
	if needVM {
		if rows, err := Collect(p.c.ListPlans(ctx, &PlanListOptions{Type: "all"})); err == nil {
			p.cachePlans(rows)
		}
	}
	if needBM {
		if rows, err := Collect(p.c.ListMetalPlans(ctx)); err == nil {
			p.cacheMetalPlans(rows)
		}
	}
}
