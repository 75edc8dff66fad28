package fleet

import "time"

// orphanReleaseAt is when orphan r is released unless a fleet claims it:
// Policy.OrphanGrace after it was found, but not after the last safe
// moment of the billed unit it was found in (see orphanUnitLastSafe). A
// grace that ran past that moment would buy a new unit (a Vultr hour, Hot
// Aisle minutes past the minimum) for a machine nobody claimed; cutting it
// short never costs more, since a fleet applied later buys a new unit
// either way (a new machine, or the orphan's next unit). A moment already
// past releases the orphan at once. m.mu held.
func (m *Manager) orphanReleaseAt(r *InstanceRecord, now time.Time) time.Time {
	at := r.OrphanSince.Add(m.pol.OrphanGrace)
	if last := m.orphanUnitLastSafe(r, now); !last.IsZero() && last.Before(at) {
		return last
	}
	return at
}

// orphanUnitLastSafe is the last safe moment of the billed unit orphan r
// was found in: for hourly billing the end of that billed hour (at least
// the minimum's end) less the hourly release margin as of now (the calm
// one when it was found inside the wide one); for
// per-minute billing with a minimum reservation not over when it was found
// the minimum's end less Policy.MinuteReleaseMargin. For a start that is
// unknown (Hot Aisle listings give none; Created is when it was first
// seen) the latest minimum it can have is used, as minimumNotOver does;
// an hourly unit is then unknown. Zero when there is none. m.mu held.
func (m *Manager) orphanUnitLastSafe(r *InstanceRecord, now time.Time) time.Time {
	o, c, found := r.Instance.Offer, r.Instance.Created, r.OrphanSince
	switch {
	case c.IsZero():
		return time.Time{}
	case o.BillingGranularity >= time.Hour:
		if r.CreatedUnknown {
			return time.Time{}
		}
		end := billedUnitEnd(c, o, found)
		if last := end.Add(-m.hourlyMargin(r, now)); found.Before(last) {
			return last
		}
		// Found inside the wide margin (a restart late in the hour, when
		// the wide margin holds): the calm margin's moment, so that a fleet
		// applied with the restart can still claim it.
		return end.Add(-m.pol.CalmHourlyReleaseMargin)
	case o.MinimumReservation > 0 && found.Before(c.Add(o.MinimumReservation)):
		return c.Add(o.MinimumReservation - min(m.pol.MinuteReleaseMargin, o.MinimumReservation))
	}
	return time.Time{}
}
