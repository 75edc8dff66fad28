package fleet

import "time"

// capFree is below what a billed unit can cost when it is free: the month's
// bill reached its cap (Offer.MonthlyCap). Floating-point slack only.
const capFree = 1e-9

// unitCost is the USD that the billed unit of an offer o billed per
// started unit (o.BillingGranularity, an hour on Vultr) from c costs when
// it starts at u (c plus whole units): PricePerHour for the unit, except
// that with a monthly cap (Offer.MonthlyCap) the units that start in one
// calendar month (UTC) cost at most the cap together — each counts in the
// month it starts in, so once the month's units before u have reached the
// cap, u costs nothing, and the unit that crosses it costs what is left.
func unitCost(o Offer, c, u time.Time) float64 {
	g := o.BillingGranularity
	price := o.PricePerHour * g.Hours()
	if o.MonthlyCap <= 0 || g <= 0 || u.Before(c) {
		return price
	}
	// n: the units that start in u's month before u.
	k := int64(u.Sub(c) / g)
	var k0 int64
	if ms := monthStart(u); ms.After(c) {
		k0 = int64((ms.Sub(c) + g - 1) / g)
	}
	n := float64(k - k0)
	return min((n+1)*price, o.MonthlyCap) - min(n*price, o.MonthlyCap)
}

// capFreeUntil is, for r billed per started hour whose paid time ends at
// end (an end of one of its units), the start of its first unit from end on
// that costs anything (unitCost): end itself, unless its month's cap
// (Offer.MonthlyCap) is reached, when every later unit that starts in the
// same calendar month (UTC) is free — then the start of its first unit in
// the next month. m.mu held.
func capFreeUntil(r *InstanceRecord, end time.Time) time.Time {
	o, c := r.Instance.Offer, r.Instance.Created
	g := o.BillingGranularity
	if o.MonthlyCap <= 0 || g < time.Hour || c.IsZero() || r.CreatedUnknown || unitCost(o, c, end) > capFree {
		return end
	}
	next := monthStart(end).AddDate(0, 1, 0)
	return c.Add((next.Sub(c) + g - 1) / g * g)
}

// monthStart is the first moment of t's calendar month in UTC.
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}
