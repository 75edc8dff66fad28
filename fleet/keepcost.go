package fleet

import (
	"cmp"
	"time"
)

// keepHorizon is how far ahead keepCost looks: keeping a node is weighed
// against releasing it now for the next hour of its life.
const keepHorizon = time.Hour

// keepCost is the USD that keeping r costs instead of releasing it now:
// its offer's price (PricePerHour, USD per hour) times the time from the
// end of what it has already paid (paidUntil: its billed hour on Vultr, its
// minimum reservation on Hot Aisle) to an hour from now, rounded up to the
// offer's billing unit (BillingGranularity: a started hour is billed whole
// on Vultr, a started minute after the minimum on Hot Aisle). It is 0 for
// a node paid beyond that hour (a Hot Aisle bare-metal server inside its 8
// prepaid hours), and a whole hour's price for a Vultr node (its next hour
// is bought whole). m.mu held.
func (m *Manager) keepCost(r *InstanceRecord, now time.Time) float64 {
	o := r.Instance.Offer
	unpaid := now.Add(keepHorizon).Sub(m.paidUntil(r, now))
	if unpaid <= 0 {
		return 0
	}
	if g := o.BillingGranularity; g > 0 {
		unpaid = (unpaid + g - 1) / g * g
	}
	return o.PricePerHour * unpaid.Hours()
}

// byKeepCost orders a before b when a is cheaper to keep (keepCost). m.mu held.
func (m *Manager) byKeepCost(a, b *InstanceRecord, now time.Time) int {
	return cmp.Compare(m.keepCost(a, now), m.keepCost(b, now))
}
