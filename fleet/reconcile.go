package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
)

// observation is what one provider listed in this pass.
type observation struct {
	ok     bool
	byID   map[string]Instance
	byReq  map[string]Instance // labelled ones, by request id
	list   []Instance
	vpcs   []VPC
	vpcsOK bool
}

// Reconcile runs one pass: observe every provider (one list call each),
// then act — adopt, time out, start agents, release idle instances, create
// what fleets lack, retry releases, attach and delete VPCs. Errors of single
// calls become events and are retried on later passes; the returned error
// is only a store failure or an ended ctx.
func (m *Manager) Reconcile(ctx context.Context) error {
	select {
	case m.pass <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-m.pass }()
	if err := m.load(ctx); err != nil {
		return err
	}
	obs := m.observe(ctx)
	m.applyObservations(ctx, obs)
	m.mu.Lock()
	now := m.clock.Now()
	m.checkDeadlines(now)
	m.releaseIdle(now)
	m.startAgents(now)
	m.mu.Unlock()
	m.scale(ctx)
	m.terminate(ctx)
	m.reconcileVPCs(ctx, obs)
	m.mu.Lock()
	m.finishFleets(m.clock.Now())
	m.mu.Unlock()
	return errors.Join(m.flush(ctx), ctx.Err())
}

func (m *Manager) wantVPCs() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.orphanVPCs) > 0 {
		return true
	}
	for _, f := range m.fleets {
		if f.Spec.Placement == PlacementCluster || f.VPC != nil {
			return true
		}
	}
	return false
}

// observe lists every provider concurrently.
func (m *Manager) observe(ctx context.Context) map[string]*observation {
	out := make(map[string]*observation, len(m.order))
	wantVPCs := m.wantVPCs()
	var g errgroup.Group
	for _, name := range m.order {
		o := &observation{}
		out[name] = o
		p := m.providers[name]
		g.Go(func() error {
			cctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
			defer cancel()
			list, err := p.List(cctx)
			if err != nil {
				m.mu.Lock()
				m.event(Event{Type: EventProviderUnavailable, Provider: name, Err: err.Error(), Message: "listing instances failed; nothing is concluded this pass"})
				m.mu.Unlock()
				return nil
			}
			o.ok, o.list = true, list
			o.byID, o.byReq = map[string]Instance{}, map[string]Instance{}
			for _, inst := range list {
				o.byID[inst.ID] = inst
				if inst.RequestID != "" {
					o.byReq[inst.RequestID] = inst
				}
			}
			if vp, ok := p.(VPCProvider); ok && wantVPCs {
				if vpcs, err := vp.ListVPCs(cctx); err == nil {
					o.vpcs, o.vpcsOK = vpcs, true
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// applyObservations updates tracked records from what the providers listed,
// confirms disappearances with a Get, and adopts or flags labelled
// resources no record knows.
func (m *Manager) applyObservations(ctx context.Context, obs map[string]*observation) {
	missing := m.missingRecords(obs)
	gone := m.confirmGone(ctx, missing)
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	for _, r := range m.insts {
		o := obs[r.Instance.Provider]
		if o == nil || !o.ok || r.Instance.Status == StatusTerminated {
			continue
		}
		if r.Instance.ID == "" {
			m.resolveUncertain(r, o, now)
			continue
		}
		if seen, ok := o.byID[r.Instance.ID]; ok {
			m.observeInstance(r, seen, now)
		} else if gone[r.Instance.RequestID] {
			m.markGone(r, now)
		}
	}
	for name, o := range obs {
		if o.ok {
			m.adoptUntracked(name, o, now)
		}
	}
}

// missingRecords returns the records a successful list did not show.
func (m *Manager) missingRecords(obs map[string]*observation) []InstanceRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []InstanceRecord
	for _, r := range m.insts {
		o := obs[r.Instance.Provider]
		if o == nil || !o.ok || r.Instance.ID == "" || r.Instance.Status == StatusTerminated {
			continue
		}
		if _, ok := o.byID[r.Instance.ID]; !ok {
			out = append(out, cloneInstance(*r))
		}
	}
	return out
}

// confirmGone asks each provider for the missing instances: only a Get that
// answers ErrNotFound proves an instance gone.
func (m *Manager) confirmGone(ctx context.Context, missing []InstanceRecord) map[string]bool {
	gone := make(map[string]bool, len(missing))
	results := make([]bool, len(missing))
	var g errgroup.Group
	g.SetLimit(m.pol.Parallelism)
	for i, r := range missing {
		g.Go(func() error {
			cctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
			defer cancel()
			_, err := m.providers[r.Instance.Provider].Get(cctx, r.Instance.ID)
			results[i] = errors.Is(err, ErrNotFound)
			return nil
		})
	}
	_ = g.Wait()
	for i, r := range missing {
		if results[i] {
			gone[r.Instance.RequestID] = true
		}
	}
	return gone
}

// observeInstance updates r from the provider's view. m.mu held.
func (m *Manager) observeInstance(r *InstanceRecord, seen Instance, now time.Time) {
	inst := &r.Instance
	inst.ProviderStatus = seen.ProviderStatus
	if seen.PublicIP != "" {
		inst.PublicIP = seen.PublicIP
	}
	if seen.PrivateIP != "" {
		inst.PrivateIP = seen.PrivateIP
	}
	if seen.SSH.Host != "" {
		inst.SSH = seen.SSH
	}
	if inst.Offer.InstanceType == "" {
		inst.Offer = seen.Offer
	}
	m.dirtyI[inst.RequestID] = true
	switch inst.Status {
	case StatusPending, StatusProvisioning:
		if seen.Running() {
			m.markRunning(r, now)
		} else {
			m.setStatus(r, StatusProvisioning, "provider: "+seen.ProviderStatus, now)
		}
	}
}

// markRunning moves r to booting, or straight to idle without an agent.
func (m *Manager) markRunning(r *InstanceRecord, now time.Time) {
	r.RunningSince = now
	m.setStatus(r, StatusBooting, "provider says running", now)
	m.event(Event{Type: EventInstanceRunning, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider,
		InstanceID: r.Instance.ID, Message: r.Instance.ProviderStatus})
	if m.agentFor(r.Instance.Fleet) == nil {
		m.markReady(r, now)
	}
}

func (m *Manager) markReady(r *InstanceRecord, now time.Time) {
	delete(m.deadlineMisses, r.Instance.Fleet)
	r.Instance.Ready = now
	r.IdleSince = now
	m.setStatus(r, StatusIdle, "ready", now)
	m.event(Event{Type: EventInstanceReady, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID})
}

// markGone closes a record the provider confirmed gone. m.mu held.
func (m *Manager) markGone(r *InstanceRecord, now time.Time) {
	if cancel, ok := m.agents[r.Instance.RequestID]; ok {
		cancel()
	}
	typ, msg := EventInstanceTerminated, "the provider confirmed the instance gone"
	if r.Termination == nil {
		typ, msg = EventInstanceVanished, "the instance disappeared without a release from this Manager"
	}
	m.setStatus(r, StatusTerminated, msg, now)
	m.event(Event{Type: typ, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: idOf(r), Message: msg})
}

// resolveUncertain looks an uncertain create up by its label. m.mu held.
func (m *Manager) resolveUncertain(r *InstanceRecord, o *observation, now time.Time) {
	if !r.CreateUncertain {
		return
	}
	if seen, ok := o.byReq[r.Instance.RequestID]; ok {
		r.CreateUncertain = false
		r.Instance.ID = seen.ID
		if r.Instance.Created.IsZero() {
			r.Instance.Created = seen.Created
		}
		m.event(Event{Type: EventInstanceAdopted, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider,
			InstanceID: seen.ID, Message: "found by label after an uncertain create"})
		if r.Instance.Status != StatusTerminating {
			m.setStatus(r, StatusProvisioning, "found by label", now)
		}
		m.observeInstance(r, seen, now)
		return
	}
	if now.Sub(r.CreateUncertainSince) >= m.pol.CreateLookupGrace {
		r.CreateUncertain = false
		m.setStatus(r, StatusTerminated, "create failed: nothing carries its label", now)
		m.event(Event{Type: EventCreateUnresolved, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider,
			InstanceID: r.Instance.RequestID, Err: r.Instance.LastError,
			Message: fmt.Sprintf("no resource carries this create's label after %s; taken as not created. A resource the provider created without the label is not tracked: see UnlabelledFound events", m.pol.CreateLookupGrace)})
	}
}
