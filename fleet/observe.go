package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// observation is what one provider listed last.
type observation struct {
	at    time.Time
	from  time.Time // when the listing was started
	byID  map[string]Instance
	byReq map[string]Instance // labelled ones, by request id
	list  []Instance
	found map[string]Instance        // an uncertain create's request id → its unlabelled instance (pairUnlabelled)
	given map[string]*InstanceRecord // an unlabelled instance's id → the given-up create it is taken for
}

// pendingSeen is when r was last known not to run, as it is first seen
// running: the listing that showed it before (prev), or with none since this Manager
// started (a restart, an adoption) its create, if that is longer ago than
// the offer's delete lock (a lock counted from now would be invented: the
// server may have run for most of an hour). Zero when unknown: the lock is
// then counted from now, as for a server just created. m.mu held.
func (m *Manager) pendingSeen(r *InstanceRecord, prev, now time.Time) time.Time {
	c := r.Instance.Created
	switch {
	case !prev.IsZero() && prev.Before(now):
		return maxTime(prev, c)
	case !c.IsZero() && !r.CreatedUnknown && now.Sub(c) > r.Instance.Offer.DeleteLock:
		return c
	}
	return time.Time{}
}

// applyList applies one successful provider listing of the kinds it
// covered, started at from: only records of those kinds (or of no known
// offer yet) are concluded on. m.mu held.
func (m *Manager) applyList(name string, list []Instance, kinds kindSet, from, now time.Time) {
	m.endRefusal(name, kinds) // the account lists these kinds again (a key fixed)
	o := &observation{at: now, from: from, list: list, byID: make(map[string]Instance, len(list)), byReq: map[string]Instance{}}
	for _, inst := range list {
		o.byID[inst.ID] = inst
		if inst.RequestID != "" {
			o.byReq[inst.RequestID] = inst
		}
	}
	m.obs[name] = o
	m.noteMisses(name, o, kinds, now)
	m.pairUnlabelled(name, o, now)
	for _, r := range m.insts {
		if r.Instance.Provider != name || (r.Instance.Offer.InstanceType != "" && !kinds.covers(r.Instance.Offer)) {
			continue
		}
		m.seen[r.Instance.RequestID] = now
		if r.Instance.ID == "" {
			m.listedFrom[r.Instance.RequestID] = from
		}
		switch {
		case r.Instance.ID == "":
			m.resolveUncertain(r, o, now)
		case r.Instance.Status == StatusTerminated:
			if seen, ok := o.byID[r.Instance.ID]; ok && m.rentalOf(r, seen) {
				m.reopen(r, seen, now)
			}
		default:
			seen, ok := o.byID[r.Instance.ID]
			switch {
			case ok && m.rentalOf(r, seen):
				prev := m.shown[r.Instance.RequestID]
				m.shown[r.Instance.RequestID] = now
				if seen.Running() && r.RunningSince.IsZero() {
					r.PendingSeen = m.pendingSeen(r, prev, now)
				}
				m.observeInstance(r, seen, now)
			case ok && r.Termination != nil:
				m.markGone(r, now) // released, and its server rented again
			case r.Termination == nil:
				m.confirmGone(r, now)
			}
		}
	}
	m.adoptUntracked(name, o, now)
}

// applyVPCList applies one listing of a provider's VPCs. m.mu held.
func (m *Manager) applyVPCList(name string, vpcs []VPC, err error, now time.Time) {
	if err != nil {
		m.event(Event{Type: EventProviderUnavailable, Provider: name, Err: err.Error(), Message: "listing VPCs failed; nothing is concluded from it"})
		return
	}
	m.vpcListed[name] = now
	m.observeVPCs(name, vpcs, now)
}

// confirmGone asks the provider for an instance its list did not show (or
// showed as another rental): only a Get that answers ErrNotFound, or shows
// the id under another create's label, proves it gone, and not while the
// instance is younger than Policy.VisibilityGrace (new servers can be
// missing from lists and answer 404 for a while). m.mu held.
func (m *Manager) confirmGone(r *InstanceRecord, now time.Time) {
	if now.Sub(maxTime(r.Instance.Created, m.answered[r.Instance.RequestID])) < m.pol.VisibilityGrace || m.busy("delete/"+r.Instance.RequestID) {
		return // too new to be concluded gone: counted from the create's answer
	}
	reqID, id, p := r.Instance.RequestID, r.Instance.ID, m.providers[r.Instance.Provider]
	m.launch("get/"+reqID, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
		got, err := p.Get(ctx, id)
		return func(now time.Time) {
			r := m.insts[reqID]
			if r == nil || r.Instance.ID != id || !r.Instance.Status.Active() ||
				!(errors.Is(err, ErrNotFound) || err == nil && !m.rentalOf(r, got)) {
				return
			}
			if o := m.obs[r.Instance.Provider]; o != nil {
				if seen, listed := o.byID[id]; listed && m.rentalOf(r, seen) {
					return // a newer list shows it
				}
			}
			m.markGone(r, now)
		}
	})
}

// observeInstance updates r from the provider's view; the record is dirty
// only when something changed. m.mu held.
func (m *Manager) observeInstance(r *InstanceRecord, seen Instance, now time.Time) {
	if r.Inferred && seen.RequestID != "" && !m.owns(seen.Owner, seen.RequestID) {
		m.yieldInferred(r, seen, now)
		return
	}
	inst := &r.Instance
	changed := false
	set := func(dst *string, v string) {
		if v != "" && *dst != v {
			*dst, changed = v, true
		}
	}
	set(&inst.ProviderStatus, seen.ProviderStatus)
	set(&inst.PublicIP, seen.PublicIP)
	set(&inst.PrivateIP, seen.PrivateIP)
	if seen.SSH.Host != "" && !sameEndpoint(inst.SSH, seen.SSH) {
		inst.SSH, changed = seen.SSH, true
	}
	if inst.Stopped != seen.Stopped {
		inst.Stopped, changed = seen.Stopped, true
	}
	if inst.Offer.InstanceType == "" && seen.Offer.InstanceType != "" {
		inst.Offer, changed = seen.Offer, true
	}
	if changed {
		m.dirtyI[inst.RequestID] = true
	}
	if m.labelWrong(r, seen) && !m.relabel[inst.RequestID] {
		m.relabel[inst.RequestID] = true
	}
	if seen.Stopped {
		m.stoppedOutOfBand(r, now)
	}
	if seen.Running() && r.RunningSince.IsZero() && r.Termination != nil {
		r.RunningSince = now // the delete lock runs from here
		m.dirtyI[inst.RequestID] = true
	}
	switch inst.Status {
	case StatusPending, StatusProvisioning:
		if seen.Running() {
			m.markRunning(r, now)
		} else {
			m.setStatus(r, StatusProvisioning, "provider: "+seen.ProviderStatus, now)
		}
	}
}

func sameEndpoint(a, b SSHEndpoint) bool {
	if a.User != b.User || a.Host != b.Host || a.Port != b.Port || (a.Jump == nil) != (b.Jump == nil) {
		return false
	}
	return a.Jump == nil || *a.Jump == *b.Jump
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

// markReady moves r to idle: its agent is up (or it runs, without an
// agent). The first time, Ready and IdleSince are set; ready again after a
// restart out of band (see restarted) both are kept, and its next check
// counts from now. m.mu held.
func (m *Manager) markReady(r *InstanceRecord, now time.Time) {
	delete(m.deadlineMisses, r.Instance.Fleet)
	delete(m.agentPathDown, r.Instance.RequestID)
	delete(m.agentVerdict, r.Instance.RequestID) // its agent was just started and verified
	m.forgetDeadlineDeferred(r.Instance.RequestID)
	if r.Instance.Ready.IsZero() {
		r.Instance.Ready = now
		r.IdleSince = now
	} else {
		m.agentChecked[r.Instance.RequestID] = now
	}
	m.setStatus(r, StatusIdle, "ready", now)
	m.event(Event{Type: EventInstanceReady, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID})
}

// markGone closes a record the provider confirmed gone. One that vanished
// (deleted out of band: no release of this Manager) is replaced by the
// fleet's next pass — unless it was idle in a fleet whose idle nodes go
// (idleGoes): it would have been released for idleness, and the fleet
// shrinks instead, as for an idle node stopped out of band
// (releaseStopped, shrinkForIdle). m.mu held.
func (m *Manager) markGone(r *InstanceRecord, now time.Time) {
	typ, msg := EventInstanceTerminated, "the provider confirmed the instance gone"
	if r.Termination == nil {
		typ, msg = EventInstanceVanished, "the instance disappeared without a release from this Manager"
		m.suspectProvider(r.Instance.Provider, now)
		if m.idleGoes(r) {
			m.shrinkForIdle(m.fleets[r.Instance.Fleet], r)
			msg += "; not replaced: it was idle, and the fleet's idle nodes go (IdleTimeout)"
		}
	}
	r.Busy = false
	m.cancelAgent(r.Instance.RequestID)
	m.forgetInstance(r)
	m.setStatus(r, StatusTerminated, msg, now)
	m.event(Event{Type: typ, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: idOf(r), Message: msg})
	m.yieldGone(r, now)
}

// yieldInferred gives up an instance taken for a create only because it
// appeared unlabelled (Inferred), now that another owner's label is on it:
// that owner's create answered with it, this one only inferred. The record
// closes without a release (the fleet gets another instance), and the
// instance is not taken for this create again. m.mu held.
func (m *Manager) yieldInferred(r *InstanceRecord, seen Instance, now time.Time) {
	m.event(Event{Type: EventForeignFound, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: seen.ID,
		Message: "taken for an uncertain create because it appeared unlabelled; " + foreignMessage(seen.Owner) + " (its owner labelled it since)"})
	id := r.Instance.RequestID
	delete(m.relabel, id)
	m.cancelAgent(id)
	r.Busy, r.Inferred, r.Termination = false, false, nil
	r.UnlabelledBefore = append(r.UnlabelledBefore, seen.ID)
	r.Instance.ID = ""
	m.setStatus(r, StatusTerminated, "another owner labelled it: not this create's", now)
	m.dirtyI[id] = true
}

// reopen tracks again an instance whose record was closed but which a list
// shows: a vanished one that came back, or one confirmed gone that is
// still listed past Policy.VisibilityGrace (its release is retried). m.mu held.
func (m *Manager) reopen(r *InstanceRecord, seen Instance, now time.Time) {
	closed := r.Instance.History[len(r.Instance.History)-1].Time
	if r.Termination != nil && now.Sub(closed) < m.pol.VisibilityGrace {
		return // lists lag behind deletes
	}
	m.event(Event{Type: EventInstanceAdopted, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: seen.ID,
		Message: "listed again after its record was closed; tracked again"})
	if r.Termination != nil {
		t := r.Termination
		t.Accepted, t.NextAttempt, t.NotBefore = time.Time{}, time.Time{}, time.Time{}
		m.setStatus(r, StatusTerminating, "listed again after its release; releasing again", now)
		return
	}
	r.Instance.Ready, r.RunningSince = time.Time{}, time.Time{}
	m.setStatus(r, StatusProvisioning, "listed again", now)
	m.observeInstance(r, seen, now)
	if f := m.fleets[r.Instance.Fleet]; f == nil || f.Deleting || m.surplus(r.Instance.Fleet) {
		m.requestRelease(r, "not wanted", m.pol.Release, now, true)
	}
}

// resolveUncertain looks an uncertain create up by its label. m.mu held.
func (m *Manager) resolveUncertain(r *InstanceRecord, o *observation, now time.Time) {
	if !r.CreateUncertain || m.busy("create/"+r.Instance.RequestID) {
		return
	}
	if seen, ok := o.byReq[r.Instance.RequestID]; ok {
		m.event(Event{Type: EventInstanceAdopted, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider,
			InstanceID: seen.ID, Message: "found by label after an uncertain create"})
		m.foundLate(r, seen, now)
		return
	}
	if seen, ok := o.found[r.Instance.RequestID]; ok {
		m.event(Event{Type: EventInstanceAdopted, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: seen.ID,
			Message: "found unlabelled after an uncertain create (a new instance of its type, no more of them than such creates); labelling it"})
		m.relabel[r.Instance.RequestID] = true
		r.Inferred = true
		m.foundLate(r, seen, now)
		return
	}
	from := r.CreateUncertainSince
	if !r.CreateAnswered {
		from = from.Add(m.pol.CreateTimeout) // the answer was lost: the call may have run until its deadline
	}
	if now.Sub(from) >= m.pol.CreateLookupGrace {
		m.suspectProvider(r.Instance.Provider, now)
		r.CreateUncertain = false
		m.setStatus(r, StatusTerminated, "create failed: nothing carries its label", now)
		m.event(Event{Type: EventCreateUnresolved, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider,
			InstanceID: r.Instance.RequestID, Err: r.Instance.LastError,
			Message: fmt.Sprintf("no resource carries this create's label after %s; taken as not created. If it shows up later under its label (or, for an offer labelled after create, as a new unlabelled instance of its type within an hour) it is tracked and released when not wanted", m.pol.CreateLookupGrace)})
	}
}
