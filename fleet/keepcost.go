package fleet

import (
	"cmp"
	"time"
)

// keepHorizon is how far ahead keepCost looks: keeping a node is weighed
// against releasing it now for the next hour of its life.
const keepHorizon = time.Hour

// keepCost is the USD that keeping r costs instead of releasing it now:
// what the provider bills for the time from the end of what it has already
// paid (paidUntil: its billed hour on Vultr — or, its month's cap reached,
// the rest of the month's hours —, its minimum reservation on Hot Aisle)
// to an hour from now, rounded up to the offer's billing unit
// (BillingGranularity: a started hour is billed whole on Vultr, a started
// minute after the minimum on Hot Aisle), at the offer's price
// (PricePerHour, USD per hour). Each hourly unit is priced by unitCost:
// the units that start in one calendar month (UTC) cost at most the
// offer's MonthlyCap together (Vultr: monthly_cost, 730 h of a Cloud GPU,
// 672 h otherwise), so the hour that reaches the cap costs what is left of
// it. It is 0 for a node paid beyond that hour (a Hot Aisle bare-metal
// server inside its 8 prepaid hours, a Vultr node past its month's cap),
// and a whole hour's price for a Vultr node below its cap (its next hour
// is bought whole). m.mu held.
func (m *Manager) keepCost(r *InstanceRecord, now time.Time) float64 {
	o := r.Instance.Offer
	paid := m.paidUntil(r, now)
	unpaid := now.Add(keepHorizon).Sub(paid)
	if unpaid <= 0 {
		return 0
	}
	g := o.BillingGranularity
	if g > 0 {
		unpaid = (unpaid + g - 1) / g * g
	}
	if g < time.Hour || o.MonthlyCap <= 0 || r.Instance.Created.IsZero() || r.CreatedUnknown {
		return o.PricePerHour * unpaid.Hours()
	}
	usd := 0.0
	for u := paid; u.Before(paid.Add(unpaid)); u = u.Add(g) {
		usd += unitCost(o, r.Instance.Created, u)
	}
	return usd
}

// byKeepCost orders a before b when a is cheaper to keep (keepCost). m.mu held.
func (m *Manager) byKeepCost(a, b *InstanceRecord, now time.Time) int {
	return cmp.Compare(m.keepCost(a, now), m.keepCost(b, now))
}
