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
// with err at now, unless err is an answer about the request. m.mu held.
func (m *Manager) noteCallFailure(provider string, err error, now time.Time) {
	if err == nil || requestAnswer(err) {
		return
	}
	if now.After(m.unsettled[provider]) {
		m.unsettled[provider] = now
	}
}

// hourlyMargin is how long before the end of its billed hour an idle
// hourly-billed instance r is released: Policy.HourlyReleaseMargin (10
// min) while its provider has had a call fail within unsettledFor, or r's
// own delete has been refused, so that the retries fit in the hour; else
// Policy.CalmHourlyReleaseMargin (3 min). m.mu held.
func (m *Manager) hourlyMargin(r *InstanceRecord, now time.Time) time.Duration {
	if at, ok := m.unsettled[r.Instance.Provider]; ok && now.Sub(at) < unsettledFor {
		return m.pol.HourlyReleaseMargin
	}
	if t := r.Termination; t != nil && !t.FirstFailure.IsZero() {
		return m.pol.HourlyReleaseMargin
	}
	return m.pol.CalmHourlyReleaseMargin
}
