package fleet

import (
	"fmt"
	"time"
)

// find returns the record with this request id, else the one holding this
// provider id (a server rented again has the records of its earlier
// rentals too: the open one, else the latest, answers). m.mu held.
func (m *Manager) find(id string) *InstanceRecord {
	if id == "" {
		return nil
	}
	if r, ok := m.insts[id]; ok {
		return r
	}
	var found *InstanceRecord
	for _, r := range m.insts {
		if r.Instance.ID == id && (found == nil || newerHolder(r, found)) {
			found = r
		}
	}
	return found
}

func (m *Manager) policyFor(f *FleetRecord) ReleasePolicy {
	if f != nil && f.Spec.ReleasePolicy != "" {
		return f.Spec.ReleasePolicy
	}
	return m.pol.Release
}

// requestRelease decides how r is released and moves it to terminating.
// It returns the earliest attempt time. m.mu held.
func (m *Manager) requestRelease(r *InstanceRecord, reason string, policy ReleasePolicy, now time.Time, announce bool) time.Time {
	if t := r.Termination; t != nil {
		if reason == "released" && (t.Reason == "scale down" || t.Reason == "idle" || t.Reason == "orphan") {
			// The caller's own Release of a node whose release the Manager
			// had decided: it stays decided (same time), but growth no longer
			// takes it back (reclaim; tester AQ).
			t.Reason = reason
			m.dirtyI[r.Instance.RequestID] = true
		}
		return maxTime(now, t.NotBefore)
	}
	t := &Termination{Requested: now, Reason: reason, Busy: r.Busy || m.acquired[r.Instance.RequestID] || r.HandOut != "" || r.JobStopped,
		HandOut: r.HandOut} // the job's GiveBack still tells its end (Termination.Busy)
	inst := &r.Instance
	rt := m.reservedUntil(r, now)
	forceable := inst.Offer.BillingGranularity < time.Hour && inst.Offer.MinimumReservation > 0
	switch {
	case policy == ReleaseNow, policy == ReleaseCompat && !inst.Offer.BareMetal:
		if minEnd := inst.Created.Add(inst.Offer.MinimumReservation); forceable && now.Before(minEnd) {
			t.Force = true
			usd := inst.Offer.PricePerHour * minEnd.Sub(now).Hours()
			msg := fmt.Sprintf("forced release inside the minimum reservation; $%.2f of it is not refunded", usd)
			if startUnsure(r) {
				msg = fmt.Sprintf("forced release, perhaps inside the minimum reservation (its start is not known exactly); at most $%.2f of it is not refunded", usd)
			}
			m.event(Event{Type: EventReleaseForced, Fleet: inst.Fleet, Provider: inst.Provider, InstanceID: inst.ID,
				USD: usd, At: minEnd, Message: msg})
		}
	case policy == ReleaseCompat:
		// Original behaviour: try without force, give up after CompatGiveUp.
		t.Compat = true
	default:
		// Inside the minimum the release must be forced; the minimum is
		// charged whole either way (see MinuteReleaseMargin). A start that
		// is unknown (adopted; Created is when it was first seen) or only
		// bounded (found after an uncertain create; Created is the earliest
		// it can have been) is not forced: the release is tried without
		// force, and a refusal for the minimum makes it wait (see
		// minimumNotOver).
		t.Force = forceable && !startUnsure(r) && now.Before(inst.Created.Add(inst.Offer.MinimumReservation))
		if now.Before(rt) {
			t.NotBefore = rt
			m.event(Event{Type: EventReleaseDeferred, Fleet: inst.Fleet, Provider: inst.Provider, InstanceID: inst.ID,
				At: rt, Message: "release waits for the end of the reservation window (paid anyway)"})
		}
	}
	r.Termination = t
	delete(m.counts, inst.Fleet)
	// A release ends the node's hand-out on its record: taken back (a fleet
	// that grows), the node is idle. Termination keeps it for the job's
	// GiveBack (givenBackInRelease).
	r.Busy, r.HandOut = false, ""
	m.cancelAgent(inst.RequestID)
	m.setStatus(r, StatusTerminating, reason, now)
	if announce {
		m.event(Event{Type: EventReleaseRequested, Fleet: inst.Fleet, Provider: inst.Provider, InstanceID: idOf(r),
			Message: reason, At: maxTime(now, t.NotBefore)})
	}
	return maxTime(now, t.NotBefore)
}

// reservedUntil is the end of r's reservation window as of now: for
// per-minute billing the end of the minimum reservation; for hourly billing
// the end of the current billed hour (at least the minimum) less
// HourlyReleaseMargin, so a release lands inside the hour already paid.
func (m *Manager) reservedUntil(r *InstanceRecord, now time.Time) time.Time {
	o, c := r.Instance.Offer, r.Instance.Created
	if c.IsZero() || r.CreatedUnknown {
		// Unknown start (adopted from a list that gives none): no window is
		// known. A release is tried without force, and the provider's
		// refusal for the minimum says it is still paid (minimumNotOver).
		return time.Time{}
	}
	g := o.BillingGranularity
	if g < time.Hour {
		if o.MinimumReservation <= 0 {
			return c
		}
		return c.Add(o.MinimumReservation - min(m.minuteMargin(r, now), o.MinimumReservation))
	}
	// Inside the margin (now after the result) a release is due at once.
	return billedUnitEnd(c, o, now).Add(-m.hourlyMargin(r, now))
}

// billedUnitEnd is, for an offer billed per started unit of
// o.BillingGranularity (an hour) from c, the end of the unit now is in, at
// least the end of the minimum reservation.
func billedUnitEnd(c time.Time, o Offer, now time.Time) time.Time {
	g := o.BillingGranularity
	k := int64(now.Sub(c)/g) + 1
	if minK := int64((o.MinimumReservation + g - 1) / g); k < minK {
		k = minK
	}
	return c.Add(time.Duration(k) * g)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func idOf(r *InstanceRecord) string {
	if r.Instance.ID != "" {
		return r.Instance.ID
	}
	return r.Instance.RequestID
}

// setStatus changes r's status and appends to its history. m.mu held.
func (m *Manager) setStatus(r *InstanceRecord, s Status, reason string, now time.Time) {
	if r.Instance.Status == s {
		return
	}
	r.Instance.Status = s
	delete(m.counts, r.Instance.Fleet)
	h := append(r.Instance.History, StatusChange{Time: now, Status: s, Reason: reason})
	if len(h) > MaxHistory { // keep the first change (the create) and the latest
		h = append(h[:1], h[len(h)-MaxHistory+1:]...)
	}
	r.Instance.History = h
	m.dirtyI[r.Instance.RequestID] = true
}

// MaxHistory bounds Instance.History: the first status change and the
// latest ones, 32 in all.
const MaxHistory = 32
