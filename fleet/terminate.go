package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
)

// reDeleteAfter: a release the provider accepted but that is still listed
// this long after is attempted again.
const reDeleteAfter = 5 * time.Minute

type deleteJob struct {
	reqID, provider, id string
	force               bool
}

// terminate attempts the releases that are due, concurrently, and closes
// records only when the provider confirms the instance gone.
func (m *Manager) terminate(ctx context.Context) {
	jobs := m.dueReleases()
	errs := make([]error, len(jobs))
	goneAfter := make([]bool, len(jobs))
	var g errgroup.Group
	g.SetLimit(m.pol.Parallelism)
	for i, j := range jobs {
		g.Go(func() error {
			p := m.providers[j.provider]
			cctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
			defer cancel()
			errs[i] = p.Delete(cctx, j.id, DeleteOptions{Force: j.force})
			if errs[i] == nil {
				_, gerr := p.Get(cctx, j.id)
				goneAfter[i] = errors.Is(gerr, ErrNotFound)
			}
			return nil
		})
	}
	_ = g.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	for i, j := range jobs {
		if r := m.insts[j.reqID]; r != nil && r.Instance.Status == StatusTerminating {
			m.releaseResult(r, errs[i], goneAfter[i], now)
		}
	}
}

// dueReleases lists the delete calls to make now; records that never got a
// resource are closed here. m.mu not held.
func (m *Manager) dueReleases() []deleteJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	var jobs []deleteJob
	for id, r := range m.insts {
		t := r.Termination
		if r.Instance.Status != StatusTerminating || t == nil {
			continue
		}
		if r.Instance.ID == "" {
			if !r.CreateUncertain { // never created: nothing to release
				m.setStatus(r, StatusTerminated, "nothing was created", now)
				m.event(Event{Type: EventInstanceTerminated, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: id, Message: "nothing was created"})
			}
			continue // uncertain: wait for the label lookup
		}
		if now.Before(t.NotBefore) || now.Before(t.NextAttempt) {
			continue
		}
		if !t.Accepted.IsZero() && now.Sub(t.Accepted) < reDeleteAfter {
			continue // accepted: the next list confirms it gone
		}
		jobs = append(jobs, deleteJob{reqID: id, provider: r.Instance.Provider, id: r.Instance.ID, force: t.Force})
	}
	return jobs
}

// releaseResult applies one delete outcome. m.mu held.
func (m *Manager) releaseResult(r *InstanceRecord, err error, goneNow bool, now time.Time) {
	t := r.Termination
	t.Attempts++
	m.dirtyI[r.Instance.RequestID] = true
	switch {
	case err == nil:
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
		m.untrack(r, now)
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

// untrack gives up on a release (ReleaseCompat only) and says so loudly.
func (m *Manager) untrack(r *InstanceRecord, now time.Time) {
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
