package fleet

import (
	"cmp"
	"slices"
	"time"
)

// dueReleases lists the releases launchReleases may act on now (terminating
// records with a resource, no call of theirs under way, accepted or past
// deleteAt), earliest billing boundary first (those with none last), then
// earliest due: when Policy.Parallelism leaves fewer slots than releases,
// the slots go to the ones a wait costs a new billing unit soonest. Records
// that never got a resource are closed here; an idle or scale-down release
// of an hourly-billed instance that falls due only after the hour it was
// meant to land in ended is put off to the last safe moment of the hour now
// paid (deferPaidUnit). m.mu held.
func (m *Manager) dueReleases(now time.Time) []*InstanceRecord {
	var due []*InstanceRecord
	for _, r := range m.insts {
		t := r.Termination
		if r.Instance.Status != StatusTerminating || t == nil {
			continue
		}
		reqID := r.Instance.RequestID
		if r.Instance.ID == "" {
			if !r.CreateUncertain { // never created: nothing to release
				m.setStatus(r, StatusTerminated, "nothing was created", now)
				m.event(Event{Type: EventInstanceTerminated, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: reqID, Message: "nothing was created"})
			}
			continue // uncertain: the create's answer or the label lookup decides
		}
		m.rewindWindow(r, now)
		if m.busy("delete/"+reqID) || m.busy("get/"+reqID) || t.Accepted.IsZero() && now.Before(m.deleteAt(r)) {
			continue
		}
		if m.deferPaidUnit(r, now, now) {
			continue // due only after the billed unit it was meant to land in ended: that of now is paid
		}
		due = append(due, r)
	}
	key := func(r *InstanceRecord) (time.Time, time.Time) {
		b, _ := m.releaseBoundary(r, now)
		return b, m.deleteAt(r)
	}
	slices.SortFunc(due, func(a, b *InstanceRecord) int {
		ab, ad := key(a)
		bb, bd := key(b)
		if x := cmp.Compare(boolRank(ab.IsZero()), boolRank(bb.IsZero())); x != 0 {
			return x
		}
		if x := ab.Compare(bb); x != 0 {
			return x
		}
		if x := ad.Compare(bd); x != 0 {
			return x
		}
		return cmp.Compare(a.Instance.RequestID, b.Instance.RequestID)
	})
	return due
}

// releaseBoundary is the next billing boundary of r after now and its
// release margin (nextBillingBoundary), and for a start that is unknown
// (adopted from a Hot Aisle listing, which gives none) with per-minute
// billing the end of the latest minimum it can have (first seen plus the
// minimum) and MinuteReleaseMargin, while ahead. Zero when there is none.
// m.mu held.
func (m *Manager) releaseBoundary(r *InstanceRecord, now time.Time) (time.Time, time.Duration) {
	if b, margin := m.nextBillingBoundary(r, now); !b.IsZero() {
		return b, margin
	}
	o, c := r.Instance.Offer, r.Instance.Created
	if r.CreatedUnknown && !c.IsZero() && o.BillingGranularity < time.Hour && o.MinimumReservation > 0 && now.Before(c.Add(o.MinimumReservation)) {
		return c.Add(o.MinimumReservation), m.pol.MinuteReleaseMargin
	}
	return time.Time{}, 0
}

// boundaryCritical reports whether a delete of r that is due now falls in
// the last release margin before its billing boundary (the reservation
// window's last safe moment has come: a Vultr hour's end less the hourly
// margin, a Hot Aisle minimum's end less MinuteReleaseMargin). Such a
// delete does not wait for a free Policy.Parallelism slot: queued behind
// others (a Hot Aisle VM DELETE blocks ~20 s) it would land past the
// boundary and buy a new unit. m.mu held.
func (m *Manager) boundaryCritical(r *InstanceRecord, now time.Time) bool {
	b, margin := m.releaseBoundary(r, now)
	return !b.IsZero() && now.Before(b) && !now.Before(b.Add(-margin))
}
