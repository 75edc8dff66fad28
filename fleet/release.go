package fleet

import (
	"context"
	"fmt"
	"time"
)

// ReleaseOption tunes one Release call.
type ReleaseOption func(*releaseOptions)

type releaseOptions struct{ policy ReleasePolicy }

// WithReleasePolicy overrides the fleet's release policy for this release
// (ReleaseNow forces a release inside the reservation window).
func WithReleasePolicy(p ReleasePolicy) ReleaseOption {
	return func(o *releaseOptions) { o.policy = p }
}

// Release asks for one instance (by provider id or request id) to be
// released, by its fleet's release policy unless overridden. It returns the
// earliest time the release will be attempted: now, or the end of the
// reservation window when the policy waits for it. The instance stays
// tracked (terminating) until the provider confirms it gone. A fleet that
// still wants the node replaces it on the next pass.
func (m *Manager) Release(ctx context.Context, instanceID string, opts ...ReleaseOption) (time.Time, error) {
	if err := m.load(ctx); err != nil {
		return time.Time{}, err
	}
	var o releaseOptions
	for _, opt := range opts {
		opt(&o)
	}
	switch o.policy {
	case "", ReleaseAtReservationEnd, ReleaseNow, ReleaseCompat:
	default:
		return time.Time{}, fmt.Errorf("gpufleet: unknown release policy %q", o.policy)
	}
	m.mu.Lock()
	r := m.find(instanceID)
	if r == nil || r.Instance.Status == StatusTerminated {
		m.mu.Unlock()
		return time.Time{}, fmt.Errorf("gpufleet: instance %q (gone or unknown): %w", instanceID, ErrNotFound)
	}
	policy := o.policy
	if policy == "" {
		policy = m.policyFor(m.fleets[r.Instance.Fleet])
	}
	now := m.clock.Now()
	if r.Termination != nil && o.policy == ReleaseNow && !r.Termination.NotBefore.IsZero() {
		r.Termination = nil // re-decide: the caller now wants it released at once
	}
	at := m.requestRelease(r, "released", policy, now, true)
	m.mu.Unlock()
	return at, m.flush(ctx)
}

// MarkBusy marks a ready instance busy: it is not released for idleness.
func (m *Manager) MarkBusy(instanceID string) error { return m.mark(instanceID, true) }

// MarkIdle marks a busy instance idle; its idle clock restarts now.
func (m *Manager) MarkIdle(instanceID string) error { return m.mark(instanceID, false) }

func (m *Manager) mark(instanceID string, busy bool) error {
	m.mu.Lock()
	r := m.find(instanceID)
	if r == nil {
		m.mu.Unlock()
		return fmt.Errorf("gpufleet: instance %s: %w", instanceID, ErrNotFound)
	}
	st := r.Instance.Status
	if st != StatusIdle && st != StatusBusy {
		m.mu.Unlock()
		return fmt.Errorf("gpufleet: instance %s is %s, not ready", instanceID, st)
	}
	now := m.clock.Now()
	r.Busy = busy
	if busy {
		m.setStatus(r, StatusBusy, "marked busy", now)
		m.event(Event{Type: EventInstanceBusy, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID})
	} else {
		r.IdleSince = now
		m.setStatus(r, StatusIdle, "marked idle", now)
		m.event(Event{Type: EventInstanceIdle, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID})
	}
	m.mu.Unlock()
	m.deliver()
	return nil
}

// find returns the record with this provider id or request id. m.mu held.
func (m *Manager) find(id string) *InstanceRecord {
	if id == "" {
		return nil
	}
	if r, ok := m.insts[id]; ok {
		return r
	}
	for _, r := range m.insts {
		if r.Instance.ID == id {
			return r
		}
	}
	return nil
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
	if r.Termination != nil {
		return maxTime(now, r.Termination.NotBefore)
	}
	t := &Termination{Requested: now, Reason: reason}
	inst := &r.Instance
	rt := m.reservedUntil(r, now)
	forceable := inst.Offer.BillingGranularity < time.Hour && inst.Offer.MinimumReservation > 0
	switch {
	case policy == ReleaseNow, policy == ReleaseCompat && !inst.Offer.BareMetal:
		if minEnd := inst.Created.Add(inst.Offer.MinimumReservation); forceable && now.Before(minEnd) {
			t.Force = true
			usd := inst.Offer.PricePerHour * minEnd.Sub(now).Hours()
			m.event(Event{Type: EventReleaseForced, Fleet: inst.Fleet, Provider: inst.Provider, InstanceID: inst.ID,
				USD: usd, At: minEnd, Message: fmt.Sprintf("forced release inside the minimum reservation; $%.2f of it is not refunded", usd)})
		}
	case policy == ReleaseCompat:
		// Original behaviour: try without force, give up after CompatGiveUp.
		t.Compat = true
	default:
		// Inside the minimum the release must be forced; the minimum is
		// charged whole either way (see MinuteReleaseMargin).
		t.Force = forceable && now.Before(inst.Created.Add(inst.Offer.MinimumReservation))
		if now.Before(rt) {
			t.NotBefore = rt
			m.event(Event{Type: EventReleaseDeferred, Fleet: inst.Fleet, Provider: inst.Provider, InstanceID: inst.ID,
				At: rt, Message: "release waits for the end of the reservation window (paid anyway)"})
		}
	}
	r.Termination = t
	r.Busy = false
	if cancel, ok := m.agents[inst.RequestID]; ok {
		cancel()
	}
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
	if c.IsZero() {
		return time.Time{}
	}
	g := o.BillingGranularity
	if g < time.Hour {
		if o.MinimumReservation <= 0 {
			return c
		}
		return c.Add(o.MinimumReservation - min(m.pol.MinuteReleaseMargin, o.MinimumReservation))
	}
	k := int64(now.Sub(c)/g) + 1
	if minK := int64((o.MinimumReservation + g - 1) / g); k < minK {
		k = minK
	}
	// Inside the margin (now after the result) a release is due at once.
	return c.Add(time.Duration(k)*g - m.pol.HourlyReleaseMargin)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
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
	r.Instance.History = append(r.Instance.History, StatusChange{Time: now, Status: s, Reason: reason})
	m.dirtyI[r.Instance.RequestID] = true
}
