package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// reDeleteAfter: a release the provider accepted but that is still listed
// this long after is attempted again.
const reDeleteAfter = 5 * time.Minute

// confirmAfter: an accepted release is checked with a Get this long after
// (Vultr destroys a server within a minute of the accepted delete).
const confirmAfter = time.Minute

// launchReleases starts the delete calls that are due, earliest billing
// boundary first, as many as Policy.Parallelism allows; a delete due in the
// last release margin before its boundary (boundaryCritical), or of an
// instance billed by the minute past its minimum (each minute queued is
// paid), starts whatever the bound. While a provider's kind of instances
// is down (its latest list or delete call failed in a way that passes) one
// delete at a time probes it, the most urgent; the others wait for its
// answer, and when it fails they are put off as if refused too
// (postponeProbed), so that an outage meets about one delete call per retry
// pace, not one per node; a delete whose next retry would come too late
// for its billing boundary (lastPaceBeforeBoundary) does not wait: queued
// behind the probe's answer it would land past the boundary and buy the
// next hour or minute. Records that never
// got a resource are closed (see dueReleases). Each delete is followed by
// a Get, and only ErrNotFound closes a record. m.mu held.
func (m *Manager) launchReleases(now time.Time) {
	under := m.deletesUnderWay()
	for _, r := range m.dueReleases(now) {
		t := r.Termination
		if !t.Accepted.IsZero() {
			if m.free(taskCall) > 0 {
				m.confirmRelease(r, now)
			}
			continue
		}
		prov, kind := r.Instance.Provider, kindKey(r.Instance.Provider, r.Instance.Offer.BareMetal)
		if m.down[kind] && under[kind] > 0 && !m.lastPaceBeforeBoundary(r, now) {
			continue // one delete probes a provider's kind that is down
		}
		if m.free(taskCall) <= 0 && !m.boundaryCritical(r, now) && !m.billedByTheMinuteNow(r, now) {
			continue
		}
		under[kind]++
		reqID, p, id, force := r.Instance.RequestID, m.providers[prov], r.Instance.ID, t.Force
		m.launch("delete/"+reqID, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
			err := p.Delete(ctx, id, DeleteOptions{Force: force})
			var got Instance
			var gerr error
			if err == nil {
				got, gerr = p.Get(ctx, id)
			}
			return func(now time.Time) {
				if r := m.insts[reqID]; r != nil && r.Instance.Status == StatusTerminating && r.Instance.ID == id {
					gone := err == nil && (errors.Is(gerr, ErrNotFound) || gerr == nil && !m.rentalOf(r, got))
					m.releaseResult(r, err, gone, now)
				}
			}
		})
	}
}

// lastPaceBeforeBoundary: now is within boundaryRetryEvery of r's next
// billing boundary, so a delete of r that waits for another call's answer
// gets no further attempt at the retry pace before the boundary. m.mu held.
func (m *Manager) lastPaceBeforeBoundary(r *InstanceRecord, now time.Time) bool {
	b, _ := m.nextBillingBoundary(r, now)
	return !b.IsZero() && !now.Before(b.Add(-boundaryRetryEvery))
}

// deleteAt is the earliest time a delete of r is worth attempting: its
// reservation window and backoff, and the offer's delete lock (no attempt
// while the provider is known to refuse it: before running, and for
// Offer.DeleteLock after, counted from activeFrom). A server that never runs is deleted from its
// provisioning deadline on. m.mu held.
func (m *Manager) deleteAt(r *InstanceRecord) time.Time {
	t, o := r.Termination, r.Instance.Offer
	at := maxTime(t.NotBefore, t.NextAttempt)
	switch {
	case !r.RunningSince.IsZero():
		at = maxTime(at, m.activeFrom(r).Add(o.DeleteLock))
	case o.DeleteNeedsRunning:
		at = maxTime(at, r.Instance.Created.Add(m.provisionTimeout(o)))
	}
	return at
}

// activeFrom is the earliest moment r's running can have started: the last
// listing that showed it not running (PendingSeen), or RunningSince when
// unknown. The delete lock is counted from it: a lock counted from the
// listing that first showed it running (up to a minute later for bare
// metal) would carry a delete planned just before an hour's end past it.
// A delete tried while the lock still holds is refused and retried.
func (m *Manager) activeFrom(r *InstanceRecord) time.Time {
	if !r.PendingSeen.IsZero() && r.PendingSeen.Before(r.RunningSince) {
		return r.PendingSeen
	}
	return r.RunningSince
}

// confirmRelease checks, with a Get, that an accepted release has taken
// effect (the Get answers ErrNotFound, or shows the server rented again
// under another create's label): first a minute after it was accepted, then
// with backoff; a release still not gone after reDeleteAfter is attempted
// again. m.mu held.
func (m *Manager) confirmRelease(r *InstanceRecord, now time.Time) {
	t := r.Termination
	if now.Before(t.NextAttempt) {
		return
	}
	if now.Sub(t.Accepted) >= reDeleteAfter {
		t.Accepted, t.NextAttempt = time.Time{}, time.Time{}
		m.dirtyI[r.Instance.RequestID] = true
		return
	}
	reqID, id, p := r.Instance.RequestID, r.Instance.ID, m.providers[r.Instance.Provider]
	m.launch("get/"+reqID, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
		got, err := p.Get(ctx, id)
		return func(now time.Time) {
			r := m.insts[reqID]
			if r == nil || r.Instance.Status != StatusTerminating || r.Termination == nil || r.Instance.ID != id {
				return
			}
			if errors.Is(err, ErrNotFound) || err == nil && !m.rentalOf(r, got) {
				m.markGone(r, now)
				return
			}
			r.Termination.NextAttempt = now.Add(time.Minute)
		}
	})
}

// releaseResult applies one delete outcome. m.mu held.
func (m *Manager) releaseResult(r *InstanceRecord, err error, goneNow bool, now time.Time) {
	t := r.Termination
	t.Attempts++
	m.dirtyI[r.Instance.RequestID] = true
	switch {
	case err == nil, errors.Is(err, ErrDeletePending):
		m.noteKindOutcome(kindKey(r.Instance.Provider, r.Instance.Offer.BareMetal), nil)
		t.Accepted, t.LastError = now, ""
		t.NextAttempt = now.Add(confirmAfter)
		if goneNow {
			m.markGone(r, now)
		}
		return
	case errors.Is(err, ErrNotFound):
		m.noteKindOutcome(kindKey(r.Instance.Provider, r.Instance.Offer.BareMetal), nil)
		m.markGone(r, now)
		return
	}
	if o := r.Instance.Offer; startUnsure(r) && errors.Is(err, ErrMinReservation) && !t.Force && !t.Compat && o.BillingGranularity < time.Hour {
		m.minimumNotOver(r, err, now)
		return
	}
	m.noteCallFailure(r.Instance.Provider, err, now)
	m.noteKindOutcome(kindKey(r.Instance.Provider, r.Instance.Offer.BareMetal), err)
	if t.FirstFailure.IsZero() {
		t.FirstFailure = now
	}
	t.LastError = err.Error()
	r.Instance.LastError = err.Error()
	if t.Compat && errors.Is(err, ErrMinReservation) && now.Sub(t.FirstFailure) >= m.pol.CompatGiveUp {
		m.untrack(r)
		return
	}
	if o := r.Instance.Offer; errors.Is(err, ErrMinReservation) && !t.Force && !t.Compat && o.BillingGranularity < time.Hour {
		// The minimum is not over after all (its known start was
		// misread): it is charged whole either way, and when it ends is
		// not known, so waiting for it could only add billed time after
		// it. Forced at once.
		t.Force, t.NextAttempt = true, now
		m.event(Event{Type: EventReleaseForced, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			Err: err.Error(), Message: "the provider refused the release inside the minimum reservation; forced (the minimum is charged whole either way)"})
		return
	}
	if m.down[kindKey(r.Instance.Provider, r.Instance.Offer.BareMetal)] {
		m.postponeProbed(r, now)
	}
	wait := backoff(t.Attempts, m.pol.TerminationMinBackoff, m.pol.TerminationMaxBackoff)
	if accountRefusal(err) {
		wait = backoff(t.Attempts, m.pol.TerminationMinBackoff, failWaitMaxRefused) // until someone fixes the key
	}
	at := m.retryAt(r, now, wait, retryAfter(err), !accountRefusal(err))
	if m.deferPaidUnit(r, now, at) {
		return
	}
	t.NextAttempt = at
	m.event(Event{Type: EventTerminationRetry, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
		Err: err.Error(), At: t.NextAttempt, Message: fmt.Sprintf("release attempt %d refused; retrying", t.Attempts)})
	if !t.Alerted && now.Sub(t.FirstFailure) >= m.pol.TerminationAlertAfter {
		t.Alerted = true
		m.event(Event{Type: EventTerminationStuck, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			Err: err.Error(), Message: fmt.Sprintf("release has failed for %s; still retrying — the instance may be billing", now.Sub(t.FirstFailure).Round(time.Second))})
	}
}

// minimumNotOver handles the provider's refusal of a release because the
// minimum reservation is not over, for an instance whose start is unknown
// (adopted: Instance.Created is when it was first seen) or only bounded
// (found after an uncertain create: CreatedLatest): the minimum ends by
// latestStart plus the offer's minimum. The instance is paid until
// then anyway: it is kept, and the release is tried again without force
// every Policy.MinuteReleaseMargin (so it lands within a margin of the
// minimum's end, whenever that is; a Retry-After is honoured), and forced
// at the last safe moment of the latest minimum it can have (that bound
// less the margin), as a known start's would be. The fleet may take it
// back meanwhile (reclaim). m.mu held.
func (m *Manager) minimumNotOver(r *InstanceRecord, err error, now time.Time) {
	t, o := r.Termination, r.Instance.Offer
	t.MinRefused++
	t.LastError = err.Error()
	end := latestStart(r).Add(o.MinimumReservation)
	last := end.Add(-min(m.pol.MinuteReleaseMargin, o.MinimumReservation))
	every := max(m.pol.MinuteReleaseMargin, boundaryMinGap)
	next := now.Add(every)
	if ra := retryAfter(err); ra > 0 {
		next = maxTime(next, now.Add(ra))
	}
	if !next.Before(last) {
		t.Force, t.NextAttempt = true, maxTime(now, last)
		usd := o.PricePerHour * end.Sub(t.NextAttempt).Hours()
		m.event(Event{Type: EventReleaseForced, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			Err: err.Error(), USD: usd, At: t.NextAttempt, Message: fmt.Sprintf(
				"the provider still refuses the release for the minimum reservation, which ends by %s at the latest (the instance's start is not known exactly); forced then, at most $%.2f of it not refunded",
				end.UTC().Format(time.RFC3339), usd)})
		return
	}
	t.NextAttempt = next
	if t.MinRefused == 1 {
		m.event(Event{Type: EventReleaseDeferred, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			Err: err.Error(), At: last, Message: fmt.Sprintf(
				"the provider refuses the release: the minimum reservation is not over (the instance's start is not known exactly); kept (paid anyway) and tried again every %s until it is accepted, forced at %s at the latest",
				every, last.UTC().Format(time.RFC3339))})
	}
}

// The retry schedule of a refused release near a billing boundary: the
// backoff alone could carry the next attempt past the moment a new billing
// unit starts (an hour on Vultr) although the provider would accept the
// delete a little before it.
const (
	// boundaryRetryEvery is the longest pause between two attempts inside
	// the last release margin before a boundary: two calls a minute.
	boundaryRetryEvery = 30 * time.Second
	// boundarySlack: the last attempt before a boundary is planned this long
	// before it (call latency; the provider's creation time is rounded to
	// the second).
	boundarySlack = 10 * time.Second
	// boundaryMinGap: two planned attempts are never closer than this.
	boundaryMinGap = 5 * time.Second
)

// retryAt is when a refused release of r is attempted again: wait (the
// backoff) from now, but not after the next billing boundary less
// boundarySlack; inside the last release margin before that boundary not
// later than boundaryRetryEvery from now; and never before a Retry-After of
// ra. Once the boundary is too close to reach, the backoff alone decides
// (the next boundary is a billing unit away), and an idle or scale-down
// release of an hourly-billed instance is put off to the next unit's last
// safe moment instead (deferPaidUnit, in releaseResult). Past a per-minute minimum
// (every minute billed) a refusal that can pass by itself (passing: not a
// refusal of the account, which waits for someone to fix the key) is
// retried every boundaryRetryEvery. m.mu held.
func (m *Manager) retryAt(r *InstanceRecord, now time.Time, wait, ra time.Duration, passing bool) time.Time {
	at := now.Add(wait)
	if passing && m.billedByTheMinuteNow(r, now) {
		at = minTime(at, now.Add(boundaryRetryEvery)) // every minute kept is billed
	}
	if b, margin := m.nextBillingBoundary(r, now); !b.IsZero() && now.Before(b.Add(-boundarySlack)) {
		by := b.Add(-boundarySlack)
		if w := b.Add(-max(margin, boundaryRetryEvery)); now.Before(w) {
			by = w // before the last margin: at its start
		} else if e := now.Add(boundaryRetryEvery); e.Before(by) {
			by = e
		}
		if by = maxTime(by, now.Add(boundaryMinGap)); by.Before(at) {
			at = by
		}
	}
	return maxTime(at, now.Add(ra))
}

// nextBillingBoundary is the next moment after now at which keeping r buys
// a new billing unit, with the release margin of its billing kind: for
// hourly billing the end of the billed hour (at least the minimum's end)
// and Policy.HourlyReleaseMargin; for per-minute billing with a minimum the
// minimum's end, while ahead, and Policy.MinuteReleaseMargin. Zero when
// there is none (creation time unknown; per-minute billing past its
// minimum).
func (m *Manager) nextBillingBoundary(r *InstanceRecord, now time.Time) (time.Time, time.Duration) {
	o, c := r.Instance.Offer, r.Instance.Created
	switch {
	case c.IsZero() || r.CreatedUnknown:
		return time.Time{}, 0
	case o.BillingGranularity >= time.Hour:
		return billedUnitEnd(c, o, now), m.hourlyMargin(r, now)
	case o.MinimumReservation > 0 && now.Before(c.Add(o.MinimumReservation)):
		return c.Add(o.MinimumReservation), m.minuteMargin(r, now)
	}
	return time.Time{}, 0
}

// deferPaidUnit puts off a release of r whose next attempt, planned at at,
// falls in a billing unit after the one the release was meant to land in
// (the unit of Requested, or of NotBefore when later): once that unit
// ended with the delete not accepted (refused, or not tried in time), the
// next one is paid whatever happens, and deleting the instance inside it
// saves nothing — a job arriving meanwhile would buy a new machine and wait
// for its boot. The release is then deferred as a release waiting for its
// window is: no attempt made (Attempts 0) and NotBefore that unit's last
// safe moment (its end less the hourly margin), so the instance is kept
// until then and a fleet that grows takes it back (reclaim). Only for
// hourly-billed offers with a known start (past the minimum, Hot Aisle
// bills per minute: nothing is paid ahead) and releases decided by the idle
// rules or a scale-down under ReleaseAtReservationEnd, of a fleet not being
// deleted: a Release, a fleet Delete, a missed deadline, and the ReleaseNow
// policy go on as planned. Said with EventReleaseDeferred, and, when deletes
// were refused, with the EventTerminationStuck alert (a billing unit was
// bought because of them). It reports whether it deferred. m.mu held.
func (m *Manager) deferPaidUnit(r *InstanceRecord, now, at time.Time) bool {
	t, o, c := r.Termination, r.Instance.Offer, r.Instance.Created
	if t == nil || !t.Accepted.IsZero() || !m.keptWhenPaid(r) {
		return false
	}
	end := billedUnitEnd(c, o, maxTime(t.Requested, t.NotBefore))
	if at.Before(end) {
		return false // it can still land in the unit it was meant for
	}
	last := billedUnitEnd(c, o, at).Add(-m.hourlyMargin(r, now))
	if !at.Before(last) {
		return false // already in that unit's last margin: tried as planned
	}
	t.Attempts, t.NextAttempt, t.NotBefore = 0, time.Time{}, last
	m.dirtyI[r.Instance.RequestID] = true
	inst := &r.Instance
	m.event(Event{Type: EventReleaseDeferred, Fleet: inst.Fleet, Provider: inst.Provider, InstanceID: inst.ID, Err: t.LastError, At: last,
		Message: fmt.Sprintf("the release did not land before the billed hour ended at %s: the next hour is paid, so the instance is kept to its last safe moment and released then (the fleet may take it back meanwhile)",
			end.UTC().Format(time.RFC3339))})
	if !t.FirstFailure.IsZero() && !t.Alerted {
		t.Alerted = true
		m.event(Event{Type: EventTerminationStuck, Fleet: inst.Fleet, Provider: inst.Provider, InstanceID: inst.ID, Err: t.LastError, At: last,
			Message: fmt.Sprintf("release refused since %s, past the end of the billed hour (%s): another hour is billed; tried again at %s",
				t.FirstFailure.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339))})
	}
	return true
}

// keptWhenPaid reports whether r's release is put off to the last safe
// moment of a billing unit it could not avoid (see deferPaidUnit): an idle
// or scale-down release, not forced, of an hourly-billed instance whose
// start is known, in a fleet that is not being deleted and releases at the
// reservation's end. m.mu held.
func (m *Manager) keptWhenPaid(r *InstanceRecord) bool {
	t, o := r.Termination, r.Instance.Offer
	f := m.fleets[r.Instance.Fleet]
	return t != nil && !t.Force && !t.Compat && (t.Reason == "idle" || t.Reason == "scale down") &&
		o.BillingGranularity >= time.Hour && !r.Instance.Created.IsZero() && !r.CreatedUnknown &&
		f != nil && !f.Deleting && m.policyFor(f) == ReleaseAtReservationEnd
}

// untrack gives up on a release (ReleaseCompat only) and says so loudly. m.mu held.
func (m *Manager) untrack(r *InstanceRecord) {
	m.event(Event{Type: EventManualCleanup, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
		At: r.Instance.ReservedUntil, Message: fmt.Sprintf("release of %s %s refused by the minimum reservation for %s; no longer tracked: release it by hand after %s or it keeps billing",
			r.Instance.Provider, r.Instance.ID, m.pol.CompatGiveUp, r.Instance.ReservedUntil.Format(time.RFC3339))})
	if m.collects(r) {
		m.orphanGone[r.Instance.RequestID] = true
	}
	m.removeRecord(r.Instance.RequestID)
	m.goneI[r.Instance.RequestID] = true
	// Never adopted again: this rental (a Hot Aisle bare-metal server rented
	// again keeps its name, under a new request id).
	m.abandoned[r.Instance.Provider+"/"+r.Instance.ID+"/"+r.Instance.RequestID] = true
}

// retryAfter extracts a Retry-After from a provider error, if any.
func retryAfter(err error) time.Duration {
	var ra interface{ RetryAfterDuration() time.Duration }
	if errors.As(err, &ra) {
		return ra.RetryAfterDuration()
	}
	return 0
}
