package hotaisle

import (
	"context"

	"github.com/gpufleet/gpufleet/fleet"
)

// The Hot Aisle VM and server objects carry no price and no minimum
// reservation: only the type rows (ListVMTypes, ListBareMetalTypes) do. The
// Provider keeps the offers it last built, by instance type, and fills the
// Offer of the instances it returns from them, so that an instance adopted
// after a lost Store still has its price and minimum reservation (without
// them the Manager computes no reservation window and never forces a release
// inside the minimum).

// cacheOffers records the offers of one kind ("vm" or "bm") by instance
// type (a later call replaces the types it lists and keeps the others) and
// marks the kind as loaded.
func (p *Provider) cacheOffers(kind string, offers []fleet.Offer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range offers {
		p.offers[o.InstanceType] = o
	}
	p.loaded[kind] = true
}

// fillOffer completes the price, minimum reservation and billing granularity
// of o from the cached offer of its instance type, where o has none.
func (p *Provider) fillOffer(o *fleet.Offer) {
	p.mu.Lock()
	c, ok := p.offers[o.InstanceType]
	p.mu.Unlock()
	if !ok {
		return
	}
	if o.PricePerHour == 0 {
		o.PricePerHour = c.PricePerHour
	}
	if o.MinimumReservation == 0 {
		o.MinimumReservation = c.MinimumReservation
	}
	if o.BillingGranularity == 0 {
		o.BillingGranularity = c.BillingGranularity
	}
}

func (p *Provider) isLoaded(kind string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loaded[kind]
}

// loadTypes fills the cache for List, once per kind: one ListVMTypes when a
// VM was listed and no VM types were loaded yet (by Offers or an earlier
// List), one ListBareMetalTypes likewise for bare-metal servers (whether or
// not bare metal is enabled: a server reserved by another client is listed
// too). Errors are ignored (the instances keep the offer built from their
// specs, without price) and the next List tries again.
func (p *Provider) loadTypes(ctx context.Context, vms []VM, bms []BareMetal) {
	if len(vms) > 0 && !p.isLoaded("vm") {
		if rows, err := p.c.ListVMTypes(ctx); err == nil {
			p.cacheOffers("vm", vmOffers(rows))
		}
	}
	if len(bms) > 0 && !p.isLoaded("bm") {
		if rows, err := p.c.ListBareMetalTypes(ctx); err == nil {
			p.cacheOffers("bm", bareMetalOffers(rows))
		}
	}
}

// vmOffers converts and merges VM type rows. A row without a positive
// OnDemandPrice (the spec does not require it) is left out: its price is
// unknown, and an offer at 0 USD per hour would be chosen first.
func vmOffers(rows []VMType) []fleet.Offer {
	out := make([]fleet.Offer, 0, len(rows))
	for _, r := range rows {
		if r.OnDemandPrice > 0 {
			out = append(out, vmOffer(r))
		}
	}
	return mergeOffers(out)
}

// bareMetalOffers converts and merges bare-metal type rows (priced ones
// only, as vmOffers).
func bareMetalOffers(rows []BareMetalType) []fleet.Offer {
	out := make([]fleet.Offer, 0, len(rows))
	for _, r := range rows {
		if r.OnDemandPrice > 0 {
			out = append(out, bareMetalOffer(r))
		}
	}
	return mergeOffers(out)
}
