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

// launchReleases starts the delete calls that are due, as many as
// Policy.Parallelism allows; records that never got a resource are closed
// here. Each delete is followed by a Get, and only ErrNotFound closes a
// record. m.mu held.
func (m *Manager) launchReleases(now time.Time) {
	for _, r := range m.sortedRecords() {
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
		if now.Before(t.NotBefore) || now.Before(t.NextAttempt) || m.busy("delete/"+reqID) {
			continue
		}
		if !t.Accepted.IsZero() && now.Sub(t.Accepted) < reDeleteAfter {
			continue // accepted: the next list confirms it gone
		}
		if m.free(taskCall) <= 0 {
			return
		}
		p, id, force := m.providers[r.Instance.Provider], r.Instance.ID, t.Force
		m.launch("delete/"+reqID, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
			err := p.Delete(ctx, id, DeleteOptions{Force: force})
			gone := false
			if err == nil {
				_, gerr := p.Get(ctx, id)
				gone = errors.Is(gerr, ErrNotFound)
			}
			return func(now time.Time) {
				if r := m.insts[reqID]; r != nil && r.Instance.Status == StatusTerminating && r.Instance.ID == id {
					m.releaseResult(r, err, gone, now)
				}
			}
		})
	}
}

// releaseResult applies one delete outcome. m.mu held.
func (m *Manager) releaseResult(r *InstanceRecord, err error, goneNow bool, now time.Time) {
	t := r.Termination
	t.Attempts++
	m.dirtyI[r.Instance.RequestID] = true
	switch {
	case err == nil, errors.Is(err, ErrDeletePending):
		t.Accepted, t.LastError = now, ""
		if goneNow {
			m.markGone(r, now)
		}
		return
	case errors.Is(err, ErrNotFound):
		m.markGone(r, now)
		return
	}
	if t.FirstFailure.IsZero() {
		t.FirstFailure = now
	}
	t.LastError = err.Error()
	r.Instance.LastError = err.Error()
	if t.Compat && errors.Is(err, ErrMinReservation) && now.Sub(t.FirstFailure) >= m.pol.CompatGiveUp {
		m.untrack(r)
		return
	}
	wait := backoff(t.Attempts, m.pol.TerminationMinBackoff, m.pol.TerminationMaxBackoff)
	if ra := retryAfter(err); ra > wait {
		wait = ra
	}
	t.NextAttempt = now.Add(wait)
	m.event(Event{Type: EventTerminationRetry, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
		Err: err.Error(), At: t.NextAttempt, Message: fmt.Sprintf("release attempt %d refused; retrying", t.Attempts)})
	if !t.Alerted && now.Sub(t.FirstFailure) >= m.pol.TerminationAlertAfter {
		t.Alerted = true
		m.event(Event{Type: EventTerminationStuck, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			Err: err.Error(), Message: fmt.Sprintf("release has failed for %s; still retrying — the instance may be billing", now.Sub(t.FirstFailure).Round(time.Second))})
	}
}

// untrack gives up on a release (ReleaseCompat only) and says so loudly. m.mu held.
func (m *Manager) untrack(r *InstanceRecord) {
	m.event(Event{Type: EventManualCleanup, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
		At: r.Instance.ReservedUntil, Message: fmt.Sprintf("release of %s %s refused by the minimum reservation for %s; no longer tracked: release it by hand after %s or it keeps billing",
			r.Instance.Provider, r.Instance.ID, m.pol.CompatGiveUp, r.Instance.ReservedUntil.Format(time.RFC3339))})
	delete(m.insts, r.Instance.RequestID)
	m.goneI[r.Instance.RequestID] = true
	m.abandoned[r.Instance.Provider+"/"+r.Instance.ID] = true // never adopted again
}

// retryAfter extracts a Retry-After from a provider error, if any.
func retryAfter(err error) time.Duration {
	var ra interface{ RetryAfterDuration() time.Duration }
	if errors.As(err, &ra) {
		return ra.RetryAfterDuration()
	}
	return 0
}
