package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// backoff is a capped exponential delay with jitter: about min·2^(n-1),
// never above max, drawn from [d/2, d].
func backoff(n int, min, max time.Duration) time.Duration {
	d := min
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d/2 + rand.N(d/2+1)
}

// definiteCreateFailure reports whether a create error proves nothing was
// created, so the next offer may be tried at once. Anything else (5xx,
// transport failure, timeout) may hide a success.
func definiteCreateFailure(err error) bool {
	for _, class := range []error{ErrNoCapacity, ErrInvalidRequest, ErrVPCUnsupported, ErrQuotaExceeded,
		ErrInsufficientBalance, ErrUnauthorized, ErrForbidden, ErrNotFound, ErrRateLimited} {
		if errors.Is(err, class) {
			return true
		}
	}
	return false
}

// fleetPlan is what one fleet needs this pass.
type fleetPlan struct {
	spec     Spec
	need     int
	anchor   *Offer // cluster: provider and region of the existing members
	vpcID    string
	vpcOwner string // provider of the VPC
}

// scale creates what fleets lack and releases what they have too much of.
func (m *Manager) scale(ctx context.Context) {
	for _, p := range m.plans() {
		if p.need > 0 {
			m.grow(ctx, p)
		}
	}
}

// plans counts each fleet's live members. A member whose create is
// uncertain counts, so it is never created twice. m.mu not held.
func (m *Manager) plans() []fleetPlan {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	var plans []fleetPlan
	for name, f := range m.fleets {
		if f.Deleting {
			continue
		}
		p := fleetPlan{spec: cloneSpec(f.Spec)}
		var live []*InstanceRecord
		for _, r := range m.sortedRecords() {
			if r.Instance.Fleet != name || r.Orphan || r.Termination != nil || r.Instance.Status == StatusTerminated {
				continue
			}
			live = append(live, r)
			if p.anchor == nil && r.Instance.Offer.InstanceType != "" {
				o := r.Instance.Offer
				p.anchor = &o
			}
		}
		if f.VPC != nil && !f.VPC.Deleting {
			p.vpcID, p.vpcOwner = f.VPC.VPC.ID, f.VPC.VPC.Provider
			if p.anchor == nil {
				p.anchor = &Offer{Provider: f.VPC.VPC.Provider, Region: f.VPC.VPC.Region}
			}
		}
		p.need = f.Spec.Nodes - len(live)
		if p.need < 0 {
			m.shrink(live, -p.need, f, now)
		}
		if p.need > 0 {
			p.need -= m.reclaim(name, p.need, now)
		}
		if p.need > 0 && (now.Before(m.fleetRetry[name]) || f.Stalled) {
			p.need = 0
		}
		plans = append(plans, p)
	}
	return plans
}

// reclaim takes back up to n members of fleet whose release for scale-down
// or idleness is still waiting for its reservation window (no attempt made
// yet): they are paid anyway, so growing the fleet reuses them instead of
// creating new ones. It returns how many it took back. m.mu held.
func (m *Manager) reclaim(fleet string, n int, now time.Time) int {
	taken := 0
	for _, r := range m.sortedRecords() {
		t := r.Termination
		if taken == n || r.Instance.Fleet != fleet || t == nil || r.Instance.Status != StatusTerminating ||
			t.Attempts > 0 || !t.Accepted.IsZero() || !now.Before(t.NotBefore) ||
			(t.Reason != "scale down" && t.Reason != "idle") {
			continue
		}
		r.Termination = nil
		switch {
		case !r.Instance.Ready.IsZero():
			r.IdleSince = now
			m.setStatus(r, StatusIdle, "release cancelled: the fleet grew again", now)
		case !r.RunningSince.IsZero():
			m.setStatus(r, StatusBooting, "release cancelled: the fleet grew again", now)
		default:
			m.setStatus(r, StatusProvisioning, "release cancelled: the fleet grew again", now)
		}
		m.event(Event{Type: EventReleaseCancelled, Fleet: fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			Message: "the fleet grew again before the reservation window ended; reused instead of creating"})
		taken++
	}
	return taken
}

// shrink releases n members: provisioning and booting ones first, then
// idle ones, newest first; never busy ones. m.mu held.
func (m *Manager) shrink(live []*InstanceRecord, n int, f *FleetRecord, now time.Time) {
	for _, want := range []Status{StatusProvisioning, StatusBooting, StatusIdle} {
		for i := len(live) - 1; i >= 0 && n > 0; i-- {
			r := live[i]
			if r.Instance.Status == want && r.Instance.ID != "" && !r.Busy {
				m.requestRelease(r, "scale down", m.policyFor(f), now, true)
				n--
			}
		}
	}
}

// grow creates up to p.need instances, trying offers cheapest first.
func (m *Manager) grow(ctx context.Context, p fleetPlan) {
	req := p.spec.Requirements
	if p.spec.Placement == PlacementCluster {
		req.Cluster = true
		if p.anchor != nil {
			req.Providers, req.Regions = []string{p.anchor.Provider}, []string{p.anchor.Region}
		}
	}
	offers, err := m.catalog.Offers(ctx, req)
	if err != nil && len(offers) == 0 {
		m.noOffers(p.spec.Name, err)
		return
	}
	if p.anchor != nil && p.spec.Placement == PlacementCluster {
		offers = preferType(offers, p.anchor.InstanceType)
	}
	offers = m.withoutAvoided(p.spec.Name, offers)
	if len(offers) == 0 {
		m.noOffers(p.spec.Name, err)
		return
	}
	for range p.need {
		if !m.createOne(ctx, p, offers) {
			return
		}
		if p.spec.Placement == PlacementCluster {
			return // one at a time: the VPC follows the first member
		}
	}
}

// withoutAvoided drops the offers the fleet skips for now.
func (m *Manager) withoutAvoided(fleet string, offers []Offer) []Offer {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	out := offers[:0:0]
	for _, o := range offers {
		if !m.avoided(fleet, o, now) {
			out = append(out, o)
		}
	}
	return out
}

// preferType moves offers of the given instance type to the front.
func preferType(offers []Offer, typ string) []Offer {
	out := make([]Offer, 0, len(offers))
	for _, o := range offers {
		if o.InstanceType == typ {
			out = append(out, o)
		}
	}
	for _, o := range offers {
		if o.InstanceType != typ {
			out = append(out, o)
		}
	}
	return out
}

func (m *Manager) noOffers(fleet string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fleetFails[fleet]++
	wait := backoff(m.fleetFails[fleet], time.Minute, 10*time.Minute)
	now := m.clock.Now()
	m.fleetRetry[fleet] = now.Add(wait)
	e := Event{Type: EventNoOffers, Fleet: fleet, At: now.Add(wait), Message: "no offer could be created; retrying later"}
	if err != nil {
		e.Err = err.Error()
	}
	m.event(e)
}

// createOne creates one member from the first offer that accepts. It
// returns false when the fleet should stop growing this pass.
func (m *Manager) createOne(ctx context.Context, p fleetPlan, offers []Offer) bool {
	var lastErr error
	for _, o := range offers {
		prov := m.providers[o.Provider]
		if prov == nil {
			continue
		}
		r := m.newPending(p.spec.Name, o)
		if err := m.flush(ctx); err != nil {
			m.log.Warn("store write failed before create", "err", err)
		}
		req := CreateRequest{Offer: o, Label: Label{Fleet: p.spec.Name, RequestID: r.Instance.RequestID}, SSHKeys: p.spec.SSHKeys}
		if p.vpcID != "" && p.vpcOwner == o.Provider {
			req.VPCID = p.vpcID
		}
		// Detached: a cancelled caller must not lose the answer of a create
		// that may already have happened.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.pol.CreateTimeout)
		inst, err := prov.Create(cctx, req)
		cancel()
		if m.created(r.Instance.RequestID, inst, req.VPCID, err) {
			return true
		}
		if !definiteCreateFailure(err) || errors.Is(err, ErrRateLimited) {
			return false // uncertain: look it up first; or throttled: next pass
		}
		lastErr = err
	}
	m.noOffers(p.spec.Name, lastErr)
	return false
}

// newPending records a member before its create call, so a crash right
// after the call still leaves a record to look the label up with.
func (m *Manager) newPending(fleet string, o Offer) *InstanceRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	r := &InstanceRecord{Instance: Instance{Provider: o.Provider, Fleet: fleet, RequestID: NewRequestID(), Offer: o, Created: now},
		CreateUncertain: true, CreateUncertainSince: now}
	m.insts[r.Instance.RequestID] = r
	m.setStatus(r, StatusPending, "creating", now)
	if o.SlowProvisioning {
		m.event(Event{Type: EventSlowProvisioning, Fleet: fleet, Provider: o.Provider, InstanceID: r.Instance.RequestID,
			Message: fmt.Sprintf("%s is known to provision slowly; deadline %s", o.InstanceType, m.provisionTimeout(o))})
	}
	return r
}

// created applies the outcome of a create call; true on success.
func (m *Manager) created(reqID string, inst Instance, vpcID string, err error) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.insts[reqID]
	now := m.clock.Now()
	fleet, provider := r.Instance.Fleet, r.Instance.Provider
	switch {
	case err == nil:
		r.CreateUncertain = false
		r.Instance.ID, r.Instance.ProviderStatus = inst.ID, inst.ProviderStatus
		r.Instance.PublicIP, r.Instance.PrivateIP, r.Instance.SSH = inst.PublicIP, inst.PrivateIP, inst.SSH
		r.Instance.VPCID = vpcID
		if !inst.Created.IsZero() {
			r.Instance.Created = inst.Created
		}
		r.Instance.ReservedUntil = m.reservedUntil(r, now)
		delete(m.fleetFails, fleet)
		m.setStatus(r, StatusProvisioning, "created", now)
		m.event(Event{Type: EventInstanceCreated, Fleet: fleet, Provider: provider, InstanceID: inst.ID,
			Message: r.Instance.Offer.String(), At: r.Instance.ReservedUntil})
		if inst.Running() {
			m.markRunning(r, now)
		}
		return true
	case definiteCreateFailure(err):
		if errors.Is(err, ErrNoCapacity) {
			m.avoidOffer(fleet, r.Instance.Offer, now.Add(soldOutPenalty))
		}
		delete(m.insts, reqID)
		m.goneI[reqID] = true
		m.event(Event{Type: EventOfferSkipped, Fleet: fleet, Provider: provider, Message: r.Instance.Offer.String(), Err: err.Error()})
	default:
		r.Instance.LastError = err.Error()
		m.dirtyI[reqID] = true
		m.event(Event{Type: EventCreateUncertain, Fleet: fleet, Provider: provider, InstanceID: reqID, Err: err.Error(),
			Message: "the create may have happened; looking it up by label before any new create"})
	}
	return false
}
