package fleet

import "time"

// outdatedHold is the hold of r, an idle node the re-buy hold keeps for
// hold past its minimum, bounded when the fleet's spec no longer matches
// r's offer (specMatches; its spec changed since r was bought): keeping r
// then costs r's price per hour, and a job that comes after r's release
// re-buys what the spec buys now (specOffer), wasting at most rebuyWaste of
// that offer. r is held no longer than that waste buys of r: a bare-metal
// node ($27.12/h) left by a change to 60-minute VMs ($23.92/h) is held at
// most 53 minutes, not its own 8-hour break-even. Unbounded when the
// catalog has no offer for the spec cached (nothing a re-buy could be
// priced by) or r's price is unknown. m.mu held.
func (m *Manager) outdatedHold(r *InstanceRecord, hold time.Duration) time.Duration {
	o, f := r.Instance.Offer, m.fleets[r.Instance.Fleet]
	if hold <= 0 || f == nil || o.PricePerHour <= 0 || m.specMatches(f, o) {
		return hold
	}
	n, ok := m.specOffer(f)
	if !ok {
		return hold
	}
	worth := time.Duration(rebuyWaste(n) / o.PricePerHour * float64(time.Hour))
	return max(0, min(hold, worth.Truncate(time.Second)))
}

// specMatches reports whether f's spec would still buy offer o, the offer
// of one of its nodes: its requirements (a cluster's, VPC support) keep it
// (Requirements.keeps: what a listing may not tell left out) at a price
// under their cap. Whether o can be bought now (sold out) is no matter.
// m.mu held.
func (m *Manager) specMatches(f *FleetRecord, o Offer) bool {
	req := f.Spec.Requirements
	req.Cluster = req.Cluster || f.Spec.Placement == PlacementCluster
	return req.keeps(o) && (req.MaxPricePerHour <= 0 || o.PricePerHour <= req.MaxPricePerHour)
}

// specOffer is the offer f's spec would buy now, from the cached catalog
// and without a call: the cheapest it matches (a cluster's where it lives,
// its first member's instance type first, as offersFor picks), or the
// cheapest sold out when none is available. ok is false when the catalog
// has none cached. m.mu held.
func (m *Manager) specOffer(f *FleetRecord) (Offer, bool) {
	req := f.Spec.Requirements
	var a *Offer
	if f.Spec.Placement == PlacementCluster {
		req.Cluster = true
		if a = m.anchor(f); a != nil {
			req.Providers, req.Regions = []string{a.Provider}, []string{a.Region}
		}
	}
	offers, _ := m.catalog.peek(req)
	if len(offers) == 0 {
		req.IncludeSoldOut = true
		offers, _ = m.catalog.peek(req)
	}
	if a != nil {
		offers = preferType(offers, a.InstanceType)
	}
	if len(offers) == 0 {
		return Offer{}, false
	}
	return offers[0], true
}

// rebuyWaste is the most, in USD, that buying offer o for a job wastes
// against a node kept for it: the longest of o's minimum reservation, its
// billing unit (Vultr's hour) and its boot, at o's price. (A job shorter
// than the minimum leaves the rest unused; a longer one still pays for the
// boot.)
func rebuyWaste(o Offer) float64 {
	return o.PricePerHour * max(o.MinimumReservation, o.BillingGranularity, o.TypicalBoot).Hours()
}
