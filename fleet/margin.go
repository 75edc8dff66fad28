package fleet

import (
	"errors"
	"time"
)

// unsettledFor is how long after one of a provider's calls failed for a
// reason other than the request itself (an outage, HTTP 5xx, 429, a
// timeout, a refused key) its hourly-billed instances keep the wide
// release margin (Policy.HourlyReleaseMargin) instead of the calm one.
const unsettledFor = 30 * time.Minute

// requestAnswer reports whether err is the provider's answer about one
// request (the instance is gone, locked, not active yet, inside its
// minimum; no capacity; a bad request), which says nothing of whether its
// next delete would land.
func requestAnswer(err error) bool {
	for _, e := range []error{ErrNotFound, ErrMinReservation, ErrLocked, ErrNotActive, ErrDeletePending,
		ErrNoCapacity, ErrVPCUnsupported, ErrVPCInUse, ErrAttachFailed, ErrAlreadyAttached,
		ErrInsufficientBalance, ErrQuotaExceeded, ErrInvalidRequest} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// noteCallFailure records that a list or delete call of provider failed
// with err at now, unless err is an answer about the request or a refusal
// of the account (a key without some right: it does not pass by itself,
// and a wider margin would not let a delete land; a key without bare-metal
// access must not keep the VMs' margin wide for good). m.mu held.
func (m *Manager) noteCallFailure(provider string, err error, now time.Time) {
	if err == nil || requestAnswer(err) || accountRefusal(err) {
		return
	}
	if now.After(m.unsettled[provider]) {
		m.unsettled[provider] = now
	}
}

// noteKindOutcome records how a list or delete call about one kind of a
// provider's instances (key: kindKey) ended: a failure that passes (not an
// answer about the request or the account) marks that kind down, any
// answer marks it up. Kinds apart: a Hot Aisle bare-metal delete that
// hangs must not hold back the VMs' releases. m.mu held.
func (m *Manager) noteKindOutcome(key string, err error) {
	if err == nil || requestAnswer(err) || accountRefusal(err) {
		delete(m.down, key)
		return
	}
	m.down[key] = true
}

// deletesUnderWay counts the delete calls in flight per provider and kind
// (kindKey). m.mu held.
func (m *Manager) deletesUnderWay() map[string]int {
	n := map[string]int{}
	for _, r := range m.insts {
		if r.Termination != nil && m.busy("delete/"+r.Instance.RequestID) {
			n[kindKey(r.Instance.Provider, r.Instance.Offer.BareMetal)]++
		}
	}
	return n
}

// hourlyMargin is how long before the end of its billed hour an idle
// hourly-billed instance r is released: Policy.HourlyReleaseMargin (10
// min) while its provider is unsettled (troubled: the failures recorded
// in the Store before this Manager started count, see loadSettle), and
// in the first unsettledFor after the Store began to record them
// (settleSince: this Manager's start when the Store held no record, or
// it could not be read: what failed before is not known), so that the
// retries fit in the hour; else Policy.CalmHourlyReleaseMargin (3 min).
// m.mu held.
func (m *Manager) hourlyMargin(r *InstanceRecord, now time.Time) time.Duration {
	if m.troubled(r, now) || now.Sub(m.settleSince) < unsettledFor {
		return m.pol.HourlyReleaseMargin
	}
	return m.pol.CalmHourlyReleaseMargin
}

// troubled reports whether r's provider has had a call fail within
// unsettledFor, or r's own delete has been refused since its release was
// last decided or put off to a paid hour (Termination.Attempts: a refusal
// in an hour now past does not widen the next hour's margin; the
// provider's own record says whether it still fails). m.mu held.
func (m *Manager) troubled(r *InstanceRecord, now time.Time) bool {
	if at, ok := m.unsettled[r.Instance.Provider]; ok && now.Sub(at) < unsettledFor {
		return true
	}
	t := r.Termination
	return t != nil && !t.FirstFailure.IsZero() && t.Attempts > 0
}

// minuteMargin is how long before the end of its minimum reservation an
// idle per-minute-billed instance r (Hot Aisle) is released, forced:
// Policy.MinuteReleaseMargin (1 min); while its provider is troubled (a
// call failed within unsettledFor, or r's delete was refused) the longer
// of it and Policy.HourlyReleaseMargin (10 min), so that a delete refused
// by the same trouble is retried inside the minimum, which is charged
// whole either way; at most 15 minutes (maxMinuteMargin, half the shortest
// minimum: an HourlyReleaseMargin of 25 min released a 30-minute VM at 5
// min, and the next job bought a second minimum). Not after a start
// alone: a fresh Hot Aisle VM would lose 9 of its 30 paid minutes. m.mu
// held.
func (m *Manager) minuteMargin(r *InstanceRecord, now time.Time) time.Duration {
	if m.troubled(r, now) && m.pol.HourlyReleaseMargin > m.pol.CalmHourlyReleaseMargin {
		return max(m.pol.MinuteReleaseMargin, min(m.pol.HourlyReleaseMargin, maxMinuteMargin))
	}
	return m.pol.MinuteReleaseMargin
}

// billedByTheMinuteNow reports whether every minute r is kept from now on
// is billed: per-minute billing, its start known, past its minimum. A
// refused delete is then retried at boundaryRetryEvery, not the backoff.
// m.mu held.
func (m *Manager) billedByTheMinuteNow(r *InstanceRecord, now time.Time) bool {
	o, c := r.Instance.Offer, r.Instance.Created
	return o.BillingGranularity > 0 && o.BillingGranularity < time.Hour && !c.IsZero() && !r.CreatedUnknown &&
		!now.Before(c.Add(o.MinimumReservation))
}

// rewindWindow moves a deferred release (no attempt made yet, waiting for
// its reservation window: Termination.NotBefore) to the window as known
// now: sooner when the provider turned unsettled since the release was
// decided, and the wide margin applies (hourlyMargin, minuteMargin); later,
// within the same billed hour, when an hourly-billed release put off past a
// boundary while its provider failed (deferPaidUnit) finds it settled: the
// calm margin keeps the node, able to take a job, to that hour's last safe
// moment. m.mu held.
func (m *Manager) rewindWindow(r *InstanceRecord, now time.Time) {
	t := r.Termination
	if t == nil || t.Attempts > 0 || t.NotBefore.IsZero() || !now.Before(t.NotBefore) {
		return
	}
	rt := m.reservedUntil(r, now)
	if o := r.Instance.Offer; !rt.IsZero() && o.BillingGranularity >= time.Hour {
		// The window of the hour the release waits in: one put off past a
		// boundary (deferPaidUnit) waits in a later hour than now's.
		rt = billedUnitEnd(r.Instance.Created, o, t.NotBefore).Add(-m.hourlyMargin(r, now))
		if !t.FirstFailure.IsZero() && rt.After(t.NotBefore) {
			t.NotBefore = rt // put off while failing, now settled: the calm margin
			m.dirtyI[r.Instance.RequestID] = true
		}
	}
	if !rt.IsZero() && rt.Before(t.NotBefore) {
		t.NotBefore = maxTime(rt, now)
		m.dirtyI[r.Instance.RequestID] = true
	}
}

// marginCheck is when an hourly-billed node that may be released before
// its hour ends (idle in a fleet whose idle release can take it, or its
// release waiting for the window) is listed, so that its provider's health
// is judged on a fresh answer: once between the hour's end less
// Policy.HourlyReleaseMargin (the wide margin) and less the calm margin —
// any listing in that window will do, and it is planned halfway, so that
// one listing serves every node whose window holds it (a fleet's nodes
// created minutes apart share a few listings an hour, whatever their
// number). A failed listing turns the wide margin on, and the release is
// due at once. Zero when none is needed. m.mu held.
func (m *Manager) marginCheck(r *InstanceRecord, seen time.Time) time.Time {
	o, c := r.Instance.Offer, r.Instance.Created
	if o.BillingGranularity < time.Hour || c.IsZero() || r.CreatedUnknown || seen.IsZero() ||
		m.pol.CalmHourlyReleaseMargin >= m.pol.HourlyReleaseMargin {
		return time.Time{}
	}
	f := m.fleets[r.Instance.Fleet]
	idle := r.Termination == nil && r.Instance.Status == StatusIdle && !r.Busy &&
		f != nil && f.Spec.IdleTimeout > 0 && f.Spec.Nodes > f.Spec.MinNodes
	waiting := r.Termination != nil && r.Termination.Accepted.IsZero() && r.Termination.Attempts == 0
	if !idle && !waiting {
		return time.Time{}
	}
	end := billedUnitEnd(c, o, seen)
	if !seen.Before(end.Add(-m.pol.HourlyReleaseMargin)) {
		return time.Time{} // listed inside the window
	}
	return end.Add(-(m.pol.HourlyReleaseMargin + m.pol.CalmHourlyReleaseMargin) / 2)
}

// postponeProbed puts off the releases of probe's provider and kind that are due
// now and waited for probe's answer, which says the provider is still
// down: each is planned as if its own delete had been refused now
// (retryAt: the retry pace, and each one's last attempt before its own
// billing boundary), without a call. m.mu held.
func (m *Manager) postponeProbed(probe *InstanceRecord, now time.Time) {
	for _, r := range m.insts {
		t := r.Termination
		if r == probe || t == nil || r.Instance.Provider != probe.Instance.Provider || r.Instance.Offer.BareMetal != probe.Instance.Offer.BareMetal || r.Instance.Status != StatusTerminating ||
			r.Instance.ID == "" || !t.Accepted.IsZero() || now.Before(m.deleteAt(r)) || m.busy("delete/"+r.Instance.RequestID) {
			continue
		}
		t.NextAttempt = m.retryAt(r, now, boundaryRetryEvery, 0, true)
		m.dirtyI[r.Instance.RequestID] = true
	}
}
