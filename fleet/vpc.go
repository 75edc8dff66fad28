package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// reconcileVPCs gives cluster fleets their VPC after the first member
// exists (so a failed launch leaks no VPC), attaches members until listing
// their VPCs confirms it, deletes a fleet's VPC once its members are all
// confirmed gone, and collects labelled VPCs no fleet claims.
func (m *Manager) reconcileVPCs(ctx context.Context, obs map[string]*observation) {
	m.mu.Lock()
	names := make([]string, 0, len(m.fleets))
	for name, f := range m.fleets {
		if f.Spec.Placement == PlacementCluster || f.VPC != nil {
			names = append(names, name)
		}
	}
	m.mu.Unlock()
	slices.Sort(names)
	for _, name := range names {
		m.fleetVPC(ctx, name)
	}
	m.collectVPCOrphans(ctx, obs)
}

// vpcMembers returns the fleet's records on provider, split into those
// still active and all of them. m.mu held.
func (m *Manager) vpcMembers(fleet, provider string) (active []*InstanceRecord) {
	for _, r := range m.sortedRecords() {
		if r.Instance.Fleet == fleet && r.Instance.Provider == provider && r.Instance.Status.Active() {
			active = append(active, r)
		}
	}
	return active
}

func (m *Manager) fleetVPC(ctx context.Context, name string) {
	m.mu.Lock()
	f := m.fleets[name]
	if f == nil {
		m.mu.Unlock()
		return
	}
	if f.VPC == nil {
		first := m.firstVPCMember(f)
		m.mu.Unlock()
		if first != nil && !f.Deleting {
			m.createVPC(ctx, name, *first)
		}
		return
	}
	vrec := f.VPC
	active := m.vpcMembers(name, vrec.VPC.Provider)
	var attach []InstanceRecord
	for _, r := range active {
		// Vultr refuses attach before the server is active: wait for running.
		if !r.VPCDone && r.Termination == nil && r.Instance.ID != "" && (r.Instance.Running() || r.Instance.VPCID != "") &&
			!m.clock.Now().Before(r.VPCNext) {
			attach = append(attach, cloneInstance(*r))
		}
	}
	deleteNow := len(active) == 0 && !m.clock.Now().Before(vrec.NextAttempt)
	m.mu.Unlock()
	vp, _ := m.providers[vrec.VPC.Provider].(VPCProvider)
	if vp == nil {
		return
	}
	for _, r := range attach {
		m.attachMember(ctx, vp, r, vrec.VPC.ID)
	}
	if deleteNow {
		m.deleteFleetVPC(ctx, vp, name)
	}
}

// firstVPCMember returns a created, live member on a VPC-capable provider
// of a cluster fleet. m.mu held.
func (m *Manager) firstVPCMember(f *FleetRecord) *Instance {
	if f.Spec.Placement != PlacementCluster {
		return nil
	}
	for _, r := range m.sortedRecords() {
		if r.Instance.Fleet != f.Spec.Name || r.Instance.ID == "" || r.Termination != nil || !r.Instance.Status.Active() {
			continue
		}
		if _, ok := m.providers[r.Instance.Provider].(VPCProvider); ok && r.Instance.Offer.SupportsVPC {
			inst := cloneInst(r.Instance)
			return &inst
		}
	}
	return nil
}

func (m *Manager) createVPC(ctx context.Context, fleet string, first Instance) {
	vp := m.providers[first.Provider].(VPCProvider)
	vpc, err := vp.CreateVPC(ctx, first.Offer.Region, Label{Fleet: fleet, RequestID: NewRequestID()})
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.event(Event{Type: EventVPCUnavailable, Fleet: fleet, Provider: first.Provider, Err: err.Error(), Message: "creating the fleet's VPC failed; retrying next pass"})
		return
	}
	if f := m.fleets[fleet]; f != nil {
		f.VPC = &VPCRecord{VPC: vpc}
		m.dirtyF[fleet] = true
	}
	m.event(Event{Type: EventVPCCreated, Fleet: fleet, Provider: first.Provider, Message: fmt.Sprintf("%s in %s (%s)", vpc.ID, vpc.Region, vpc.Subnet)})
}

// attachMember attaches one member (unless it was attached at create) and
// confirms it by listing the member's VPCs.
func (m *Manager) attachMember(ctx context.Context, vp VPCProvider, r InstanceRecord, vpcID string) {
	var err error
	if r.Instance.VPCID != vpcID {
		err = vp.AttachVPC(ctx, r.Instance.ID, vpcID)
	}
	confirmed := false
	if err == nil {
		ids, lerr := vp.InstanceVPCs(ctx, r.Instance.ID)
		confirmed = lerr == nil && slices.Contains(ids, vpcID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.insts[r.Instance.RequestID]
	if rec == nil {
		return
	}
	m.dirtyI[rec.Instance.RequestID] = true
	if !confirmed {
		rec.VPCAttempts++
		rec.VPCNext = m.clock.Now().Add(backoff(rec.VPCAttempts, 15*time.Second, time.Minute))
	}
	ev := Event{Fleet: rec.Instance.Fleet, Provider: rec.Instance.Provider, InstanceID: rec.Instance.ID}
	switch {
	case confirmed:
		rec.VPCDone, rec.Instance.VPCID = true, vpcID
		ev.Type, ev.Message = EventVPCAttached, vpcID
	case errors.Is(err, ErrVPCUnsupported):
		rec.VPCDone = true
		ev.Type, ev.Err, ev.Message = EventVPCUnavailable, err.Error(), "the plan has no private networking; running without the VPC"
	case errors.Is(err, ErrAttachFailed):
		rec.VPCTries++
		if rec.VPCTries >= m.pol.VPCAttachAttempts {
			rec.VPCDone = true
			ev.Type, ev.Err, ev.Message = EventVPCUnavailable, err.Error(), fmt.Sprintf("attach failed %d times; running without the VPC", rec.VPCTries)
		}
	}
	if ev.Type != "" {
		m.event(ev)
	}
}

// deleteFleetVPC deletes the fleet's VPC once no member is active,
// retrying while the provider still counts servers attached.
func (m *Manager) deleteFleetVPC(ctx context.Context, vp VPCProvider, fleet string) {
	m.mu.Lock()
	f := m.fleets[fleet]
	if f == nil || f.VPC == nil {
		m.mu.Unlock()
		return
	}
	id := f.VPC.VPC.ID
	f.VPC.Deleting = true
	m.mu.Unlock()
	err := vp.DeleteVPC(ctx, id)
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	m.dirtyF[fleet] = true
	if err == nil || errors.Is(err, ErrNotFound) {
		f.VPC = nil
		m.deletedVPCs[id] = true // this pass's list still shows it
		m.event(Event{Type: EventVPCDeleted, Fleet: fleet, Provider: vp.(Provider).Name(), Message: id})
		return
	}
	f.VPC.Attempts++
	f.VPC.LastError = err.Error()
	f.VPC.NextAttempt = now.Add(backoff(f.VPC.Attempts, 10*time.Second, 2*time.Minute))
	m.event(Event{Type: EventVPCDeleteRetry, Fleet: fleet, Provider: vp.(Provider).Name(), Err: err.Error(), At: f.VPC.NextAttempt, Message: id})
}

// collectVPCOrphans deletes labelled VPCs that no fleet claims, after
// OrphanGrace; unlabelled VPCs are never touched.
func (m *Manager) collectVPCOrphans(ctx context.Context, obs map[string]*observation) {
	type job struct {
		vp VPCProvider
		id string
	}
	var jobs []job
	m.mu.Lock()
	now := m.clock.Now()
	for name, o := range obs {
		vp, ok := m.providers[name].(VPCProvider)
		if !ok || !o.vpcsOK {
			continue
		}
		for _, v := range o.vpcs {
			if m.deletedVPCs[v.ID] {
				continue
			}
			if v.Fleet == "" || m.claimedVPC(v) {
				delete(m.orphanVPCs, v.ID)
				continue
			}
			rec, seen := m.orphanVPCs[v.ID]
			if !seen {
				rec = &VPCRecord{VPC: v, NextAttempt: now.Add(m.pol.OrphanGrace)}
				m.orphanVPCs[v.ID] = rec
				m.event(Event{Type: EventOrphanFound, Fleet: v.Fleet, Provider: name, InstanceID: v.ID, At: rec.NextAttempt, Message: "VPC labelled for a fleet that does not claim it"})
			}
			if !now.Before(rec.NextAttempt) {
				jobs = append(jobs, job{vp, v.ID})
			}
		}
	}
	m.pruneDeletedVPCs(obs)
	m.mu.Unlock()
	for _, j := range jobs {
		err := j.vp.DeleteVPC(ctx, j.id)
		m.mu.Lock()
		rec := m.orphanVPCs[j.id]
		if err == nil || errors.Is(err, ErrNotFound) {
			delete(m.orphanVPCs, j.id)
			m.event(Event{Type: EventVPCDeleted, Fleet: rec.VPC.Fleet, Provider: rec.VPC.Provider, Message: j.id + " (orphan)"})
		} else {
			rec.Attempts++
			rec.NextAttempt = m.clock.Now().Add(backoff(rec.Attempts, 10*time.Second, 2*time.Minute))
			m.event(Event{Type: EventVPCDeleteRetry, Fleet: rec.VPC.Fleet, Provider: rec.VPC.Provider, Err: err.Error(), At: rec.NextAttempt, Message: j.id + " (orphan)"})
		}
		m.mu.Unlock()
	}
}

// pruneDeletedVPCs forgets deleted VPCs that the lists no longer show. m.mu held.
func (m *Manager) pruneDeletedVPCs(obs map[string]*observation) {
	listed := map[string]bool{}
	for _, o := range obs {
		if !o.vpcsOK {
			return // cannot tell yet
		}
		for _, v := range o.vpcs {
			listed[v.ID] = true
		}
	}
	for id := range m.deletedVPCs {
		if !listed[id] {
			delete(m.deletedVPCs, id)
		}
	}
}

// claimedVPC reports whether a fleet owns v. m.mu held.
func (m *Manager) claimedVPC(v VPC) bool {
	f := m.fleets[v.Fleet]
	return f != nil && f.VPC != nil && f.VPC.VPC.ID == v.ID
}

// finishFleets forgets deleted fleets once nothing of theirs may bill. m.mu held.
func (m *Manager) finishFleets(now time.Time) {
	for name, f := range m.fleets {
		if !f.Deleting || f.VPC != nil {
			continue
		}
		busy := false
		for _, r := range m.insts {
			if r.Instance.Fleet == name && !r.Orphan && (r.Instance.Status.Active() || r.CreateUncertain) {
				busy = true
				break
			}
		}
		if busy {
			continue
		}
		delete(m.fleets, name)
		delete(m.keyedAgents, name)
		m.goneF[name] = true
		m.event(Event{Type: EventFleetDeleted, Fleet: name, Time: now, Message: "every instance (and the VPC, if any) is confirmed gone"})
	}
}
