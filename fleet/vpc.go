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
// their VPCs confirms it, and deletes a fleet's VPC once its members are
// all confirmed gone (the fleet deleted or scaled to zero, or every launch
// failed). m.mu held.
func (m *Manager) reconcileVPCs(now time.Time) {
	for _, name := range m.fleetNames() {
		f := m.fleets[name]
		switch {
		case f.VPC == nil:
			m.planVPC(f, now)
		case f.VPC.Pending:
			m.pendingVPC(f, now)
		default:
			m.fleetVPC(f, now)
		}
	}
}

// planVPC records a pending VPC for a cluster fleet whose first member
// exists; launchVPCCreates makes the call once the Store holds it. m.mu held.
func (m *Manager) planVPC(f *FleetRecord, now time.Time) {
	if f.Spec.Placement != PlacementCluster || f.Deleting || now.Before(m.fleetRetry["vpc/"+f.Spec.Name]) {
		return
	}
	first := m.firstVPCMember(f)
	if first == nil || m.vpcListed[first.Provider].IsZero() {
		return // no VPC create before the provider's VPCs were listed: the fleet's may be there (a lost Store)
	}
	f.VPC = &VPCRecord{VPC: VPC{Provider: first.Provider, Region: first.Offer.Region, Fleet: f.Spec.Name, Owner: m.owner,
		RequestID: NewRequestID()}, Pending: true, Since: now}
	m.dirtyF[f.Spec.Name] = true
	m.vpcCreates = append(m.vpcCreates, f.Spec.Name)
}

// launchVPCCreates starts the VPC creates planned this step. m.mu held.
func (m *Manager) launchVPCCreates(ctx context.Context, storeErr error) {
	names := m.vpcCreates
	m.vpcCreates = nil
	for _, name := range names {
		f := m.fleets[name]
		if f == nil || f.VPC == nil || !f.VPC.Pending {
			continue
		}
		if (storeErr != nil && m.dirtyF[name]) || ctx.Err() != nil {
			f.VPC = nil // never called
			m.dirtyF[name] = true
			continue
		}
		v := f.VPC.VPC
		vp := m.providers[v.Provider].(VPCProvider)
		label := Label{Owner: m.owner, Fleet: name, RequestID: v.RequestID}
		m.launch("vpc/"+name, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
			vpc, err := vp.CreateVPC(ctx, v.Region, label)
			return func(now time.Time) { m.vpcCreated(name, v.RequestID, vpc, err, now) }
		})
	}
}

// vpcCreated applies a VPC create's answer. m.mu held.
func (m *Manager) vpcCreated(fleet, reqID string, vpc VPC, err error, now time.Time) {
	f := m.fleets[fleet]
	if f == nil || f.VPC == nil || !f.VPC.Pending || f.VPC.VPC.RequestID != reqID {
		if err == nil && vpc.ID != "" { // no longer wanted: collected as an orphan
			m.orphanVPC(vpc, now)
		}
		return
	}
	m.dirtyF[fleet] = true
	switch {
	case err == nil && vpc.ID != "":
		m.settleVPC(f, vpc)
	case err != nil && definiteCreateFailure(err):
		vpc.Provider = f.VPC.VPC.Provider
		f.VPC = nil
		m.fleetFails["vpc/"+fleet]++
		m.fleetRetry["vpc/"+fleet] = now.Add(backoff(m.fleetFails["vpc/"+fleet], 15*time.Second, 5*time.Minute))
		m.event(Event{Type: EventVPCUnavailable, Fleet: fleet, Provider: vpc.Provider, Err: err.Error(), Message: "creating the fleet's VPC failed; retrying"})
	default:
		if err == nil {
			err = errors.New("the provider answered without a VPC id")
		}
		f.VPC.LastError = err.Error()
		m.event(Event{Type: EventCreateUncertain, Fleet: fleet, Provider: f.VPC.VPC.Provider, InstanceID: reqID, Err: err.Error(),
			Message: "the VPC create may have happened; looking it up by label before any new create"})
	}
}

// settleVPC makes vpc the fleet's VPC. m.mu held.
func (m *Manager) settleVPC(f *FleetRecord, vpc VPC) {
	f.VPC.VPC, f.VPC.Pending, f.VPC.LastError = vpc, false, ""
	delete(m.orphanVPCs, vpc.ID)
	delete(m.fleetFails, "vpc/"+f.Spec.Name)
	m.dirtyF[f.Spec.Name] = true
	m.event(Event{Type: EventVPCCreated, Fleet: f.Spec.Name, Provider: vpc.Provider, Message: fmt.Sprintf("%s in %s (%s)", vpc.ID, vpc.Region, vpc.Subnet)})
}

// pendingVPC gives up on an uncertain VPC create that no list has shown
// within Policy.CreateLookupGrace. m.mu held.
func (m *Manager) pendingVPC(f *FleetRecord, now time.Time) {
	if m.busy("vpc/"+f.Spec.Name) || now.Sub(f.VPC.Since) < m.pol.CreateLookupGrace ||
		m.vpcListed[f.VPC.VPC.Provider].Before(f.VPC.Since.Add(m.pol.CreateLookupGrace)) {
		return // its answer is awaited, or the label lookup still has time: a listing after the grace decides
	}
	m.suspectProvider(f.VPC.VPC.Provider, now)
	m.event(Event{Type: EventCreateUnresolved, Fleet: f.Spec.Name, Provider: f.VPC.VPC.Provider, InstanceID: f.VPC.VPC.RequestID,
		Err: f.VPC.LastError, Message: "no VPC carries this create's label; taken as not created"})
	f.VPC = nil
	m.dirtyF[f.Spec.Name] = true
}

// fleetVPC attaches members and deletes the VPC once no member is active. m.mu held.
func (m *Manager) fleetVPC(f *FleetRecord, now time.Time) {
	vrec := f.VPC
	vp, _ := m.providers[vrec.VPC.Provider].(VPCProvider)
	if vp == nil {
		return
	}
	active := 0
	for _, r := range m.byFleet[f.Spec.Name] {
		if r.Instance.Provider != vrec.VPC.Provider || !(r.Instance.Status.Active() || r.CreateUncertain) {
			continue
		}
		active++
		// Vultr refuses attach before the server is active: wait for running.
		if !r.VPCDone && r.Termination == nil && r.Instance.ID != "" && (r.Instance.Running() || r.Instance.VPCID != "") &&
			!now.Before(r.VPCNext) && m.free(taskCall) > 0 {
			m.attachMember(vp, r, vrec.VPC.ID)
		}
	}
	// No live member (the fleet deleted, scaled to zero, or its launches
	// failing): the VPC goes, and from the first delete call on it is
	// Deleting: no create joins it (see vpcBeingDeleted), since a delete
	// whose answer was lost may still take effect. A fleet that grows again
	// gets a new VPC after its first member (planVPC). A create planned
	// first counts as a member here, so no delete starts under it.
	busy := m.busy("vpcdel/" + f.Spec.Name)
	switch {
	case active == 0 && !now.Before(vrec.NextAttempt) && !busy && !m.deletingBlocksGrowth(f):
		if !vrec.Deleting {
			vrec.Deleting = true
			m.dirtyF[f.Spec.Name] = true
		}
		m.deleteFleetVPC(vp, f.Spec.Name, vrec.VPC.ID)
	case active > 0 && vrec.Deleting && !busy && m.vpcDelRefused[vrec.VPC.ID]:
		m.keepVPC(f) // a member came back (adopted, listed again): the VPC, still there, is wanted again
	}
}

// vpcBeingDeleted reports whether fleet f's VPC is being deleted, so that
// no create may start (its members would join a VPC that may be gone by
// the time they run). A deletion whose last delete call the provider
// refused outright (the VPC is certainly still there: attachments linger
// a minute after the last member is deleted) is called off instead, with
// no call under way, and the growing fleet keeps its VPC. m.mu held.
func (m *Manager) vpcBeingDeleted(f *FleetRecord) bool {
	v := f.VPC
	busy := m.busy("vpcdel/" + f.Spec.Name)
	switch {
	case v == nil || (!v.Deleting && !busy):
		return false
	case busy || !m.vpcDelRefused[v.VPC.ID]:
		return true // under way, or its outcome unknown: the next attempt (or a 404) decides
	}
	m.keepVPC(f)
	return false
}

// deletingBlocksGrowth reports whether f wants members while its VPC is
// being deleted with an outcome no answer has told (a 5xx, a timeout): the
// delete is not tried again, and a listing of the provider's VPCs decides
// (settleDeletingVPCs), so that an outage of the delete call does not keep
// the fleet from growing until it ends. m.mu held.
func (m *Manager) deletingBlocksGrowth(f *FleetRecord) bool {
	v := f.VPC
	return v != nil && v.Deleting && !f.Deleting && f.Spec.Nodes > 0 &&
		!m.busy("vpcdel/"+f.Spec.Name) && !m.vpcDelRefused[v.VPC.ID]
}

// settleDeletingVPCs decides, from a listing of provider's VPCs started at
// from, the VPCs being deleted of fleets that want to grow, once their last
// delete call answered Policy.VisibilityGrace before the listing started (a
// delete whose answer was lost may land a while later): one still listed is
// there (the delete took no effect: the fleet keeps it, EventVPCKept); one
// not listed is gone (deleted: the fleet gets a new
// VPC after its first member). m.mu held.
func (m *Manager) settleDeletingVPCs(provider string, vpcs []VPC, from, now time.Time) {
	for name, f := range m.fleets {
		if !m.deletingBlocksGrowth(f) || f.VPC.VPC.Provider != provider {
			continue
		}
		id := f.VPC.VPC.ID
		if at, ok := m.vpcDelAnswered[id]; !ok || !at.Add(m.pol.VisibilityGrace).Before(from) {
			continue // a delete may land after the listing began
		}
		if slices.ContainsFunc(vpcs, func(v VPC) bool { return v.ID == id }) {
			// Still there: kept for the members to come, which the planner
			// creates before the deletion could start again.
			m.keepVPC(f)
			f.VPC.NextAttempt = now.Add(m.pol.VisibilityGrace)
			m.event(Event{Type: EventVPCKept, Fleet: name, Provider: provider, Message: id + " (its delete failed; a listing shows it there; the fleet grows again)"})
			continue
		}
		f.VPC = nil
		m.dirtyF[name] = true
		m.deletedVPCs[id] = now
		delete(m.vpcDelAnswered, id)
		m.event(Event{Type: EventVPCDeleted, Fleet: name, Provider: provider, Message: id + " (its delete's answer was lost; a listing shows it gone)"})
	}
}

// keepVPC calls off the deletion of f's VPC. m.mu held.
func (m *Manager) keepVPC(f *FleetRecord) {
	v := f.VPC
	delete(m.vpcDelRefused, v.VPC.ID)
	v.Deleting, v.Attempts, v.NextAttempt, v.LastError = false, 0, time.Time{}, ""
	m.dirtyF[f.Spec.Name] = true
}

// refusedOutright reports whether a VPC delete's error proves that the
// delete took no effect (the VPC still has members, or the call was
// refused before anything happened); a timeout or a 5xx proves nothing.
func refusedOutright(err error) bool {
	for _, class := range []error{ErrVPCInUse, ErrRateLimited, ErrNotSent, ErrUnauthorized, ErrForbidden} {
		if errors.Is(err, class) {
			return true
		}
	}
	return false
}

// firstVPCMember returns a created, live member on a VPC-capable provider
// of a cluster fleet. m.mu held.
func (m *Manager) firstVPCMember(f *FleetRecord) *Instance {
	for _, r := range m.members(f.Spec.Name) {
		if r.Instance.ID == "" {
			continue
		}
		if _, ok := m.providers[r.Instance.Provider].(VPCProvider); ok && r.Instance.Offer.SupportsVPC {
			inst := cloneInst(r.Instance)
			return &inst
		}
	}
	return nil
}

// deleteFleetVPC deletes the fleet's VPC, retrying while the provider
// still counts servers attached. m.mu held.
func (m *Manager) deleteFleetVPC(vp VPCProvider, fleet, id string) {
	m.launch("vpcdel/"+fleet, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
		err := vp.DeleteVPC(ctx, id)
		return func(now time.Time) {
			f := m.fleets[fleet]
			if f == nil || f.VPC == nil || f.VPC.VPC.ID != id {
				return
			}
			m.dirtyF[fleet] = true
			delete(m.vpcDelRefused, id)
			m.vpcDelAnswered[id] = now
			if err == nil || errors.Is(err, ErrNotFound) {
				f.VPC = nil
				m.deletedVPCs[id] = now // lists may still show it for a while
				m.event(Event{Type: EventVPCDeleted, Fleet: fleet, Provider: vp.(Provider).Name(), Message: id})
				return
			}
			if refusedOutright(err) {
				m.vpcDelRefused[id] = true
			}
			f.VPC.Attempts++
			f.VPC.LastError = err.Error()
			f.VPC.NextAttempt = now.Add(backoff(f.VPC.Attempts, 10*time.Second, 2*time.Minute))
			m.event(Event{Type: EventVPCDeleteRetry, Fleet: fleet, Provider: vp.(Provider).Name(), Err: err.Error(), At: f.VPC.NextAttempt, Message: id})
		}
	})
}

// finishFleets forgets deleted fleets once nothing of theirs may bill: no
// instance active, no create uncertain, and no create given up whose
// lateCreateWindow is open or was not listed at its end (lateCreateOpen:
// its instance may still land, unlabelled on Hot Aisle, and is released
// when found; a fleet forgotten before would leave it to nobody once the
// caller stops the Manager). m.mu held.
func (m *Manager) finishFleets(now time.Time) {
	for name, f := range m.fleets {
		if !f.Deleting || f.VPC != nil {
			continue
		}
		busy := false
		for _, r := range m.insts {
			if r.Instance.Fleet == name && !r.Orphan && (r.Instance.Status.Active() || r.CreateUncertain || m.lateCreateOpen(r)) {
				busy = true
				break
			}
		}
		if busy || m.keysLeft(name, now) {
			continue
		}
		delete(m.fleets, name)
		delete(m.keyedAgents, name)
		delete(m.dirtyF, name)
		m.goneF[name] = true
		m.event(Event{Type: EventFleetDeleted, Fleet: name, Time: now, Message: "every instance (and the VPC and SSH keys, if any) is confirmed gone"})
	}
}
