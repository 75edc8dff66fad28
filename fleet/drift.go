package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// OnStopped says what the Manager does with an instance the provider says
// is powered off although nobody here asked for it (a console user, a
// host failure). A stopped machine still bills.
type OnStopped string

// OnStopped values.
const (
	// OnStoppedReplace (the default) releases the stopped instance by the
	// fleet's release policy and creates a replacement — unless no job had
	// it (idle, not handed out) and the fleet's idle nodes go (IdleTimeout,
	// above MinNodes): the fleet then shrinks by one, as an idle release
	// shrinks it, and buys nothing no job asked for.
	OnStoppedReplace OnStopped = "replace"
	// OnStoppedRestart powers it on again (providers that implement
	// Restarter; others are replaced) and starts its agent again. The node
	// keeps its idle facts (Instance.Ready, InstanceRecord.IdleSince) and,
	// idle at the stop, its re-buy hold: an idle node is released when it
	// would have been without the stop (its minimum's end, an hour's last
	// safe moment, the end of its hold), even while still booting.
	OnStoppedRestart OnStopped = "restart"
)

// stoppedOutOfBand acts on an instance a listing or a Get says is stopped. m.mu held.
func (m *Manager) stoppedOutOfBand(r *InstanceRecord, now time.Time) {
	if r.Termination != nil || !r.Instance.Running() || m.busy("start/"+r.Instance.RequestID) {
		return
	}
	rs, canRestart := m.providers[r.Instance.Provider].(Restarter)
	if m.pol.OnStopped == OnStoppedRestart && canRestart {
		m.event(Event{Type: EventInstanceStopped, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			Message: "powered off out of band; starting it again"})
		reqID, id := r.Instance.RequestID, r.Instance.ID
		m.launch("start/"+reqID, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
			err := rs.Start(ctx, id)
			return func(now time.Time) { m.restarted(reqID, err, now) }
		})
		return
	}
	m.releaseStopped(r, "powered off out of band (it still bills)", nil, now)
}

// releaseStopped releases r, powered off out of band (what: how, err: the
// power-on's error if any), and replaces it — unless no job had it (idle,
// not handed out) in a fleet whose idle nodes go (IdleTimeout, above
// MinNodes): that node would have been released for idleness, and a
// replacement would only buy a new billing unit (a minimum: 8 h of Hot
// Aisle bare metal) that no job asked for; the fleet shrinks instead, as
// an idle release shrinks it (shrinkForIdle), and an orchestrator that
// needs a node grows it again (tester AS). m.mu held.
func (m *Manager) releaseStopped(r *InstanceRecord, what string, err error, now time.Time) {
	f := m.fleets[r.Instance.Fleet]
	idle := m.idleGoes(r)
	ev := Event{Type: EventInstanceStopped, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
		Message: what + "; released and replaced"}
	if err != nil {
		ev.Err = err.Error()
	}
	if idle {
		m.shrinkForIdle(f, r)
		ev.Message = what + "; released, not replaced: it was idle, and the fleet's idle nodes go (IdleTimeout)"
	}
	m.event(ev)
	m.requestRelease(r, "stopped out of band", m.policyFor(f), now, true)
}

// idleGoes reports whether r, stopped or gone out of band, is a node no
// job had in a fleet whose idle nodes go: idle (or idle at an earlier stop
// and coming back from it, restartingIdle), not busy, not handed out by
// Acquire, not kept for the holder of a job a stop ended (JobStopped), in
// a fleet with an IdleTimeout above its MinNodes, and not wanted by a
// growth under way (idleAtGrowth, see growth.go). Such a node would have
// been released for idleness: the fleet shrinks by one rather than buy a
// replacement (a new billing unit) no job asked for (tester AS: stopped;
// tester AY: destroyed). m.mu held.
func (m *Manager) idleGoes(r *InstanceRecord) bool {
	f := m.fleets[r.Instance.Fleet]
	return (r.Instance.Status == StatusIdle || m.restartingIdle(r)) && !r.Busy && !r.JobStopped && !m.acquired[r.Instance.RequestID] &&
		f != nil && f.Spec.IdleTimeout > 0 && f.Spec.Nodes > f.Spec.MinNodes && !(f.growing() && idleAtGrowth(r, f))
}

// restarted applies a power-on's answer: the agent is started again. The
// node keeps what decides its idle release (see idleReleaseAt): Ready
// (when it first became ready) and IdleSince (when its last job ended, or
// it went idle); a job under way at the stop ended with it (IdleSince now,
// the job noted for the re-buy hold). A node idle before the stop is thus
// released at its minimum's end (an hour's last safe moment), as if never
// stopped, even while it boots again (idleReleaseDue). m.mu held.
func (m *Manager) restarted(reqID string, err error, now time.Time) {
	r := m.insts[reqID]
	if r == nil || r.Termination != nil || r.Instance.Status == StatusTerminated {
		return
	}
	if err != nil && (errors.Is(err, ErrLocked) || errors.Is(err, ErrNotActive) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrRateLimited)) {
		m.event(Event{Type: EventInstanceStopped, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			Err: err.Error(), Message: "starting it again was refused for now; tried again at its next check"})
		return
	}
	if err != nil {
		m.releaseStopped(r, "starting it again failed", err, now)
		return
	}
	if r.Busy { // the stop ended its job; its holder gives the node back (JobStopped)
		m.noteBusy(r, false, now)
		r.IdleSince, r.JobStopped = now, true
	}
	r.Busy, r.AcquiredBy, r.RunningSince, r.AgentTries = false, "", now, 0
	r.Instance.Stopped = false // powered on: not a stopped member for a scale-down any more
	m.setStatus(r, StatusBooting, "started again after a stop out of band", now)
	if m.agentFor(r.Instance.Fleet) == nil {
		m.markReady(r, now)
	}
}

// restartingIdle reports whether r, idle when it was powered off out of
// band, is on its way back under OnStoppedRestart: still stopped (its
// power-on under way, or refused for now and tried again) on a provider
// that can start it, or booting again after the power-on (restartBooting).
// Not one busy, nor one whose job the stop ended (JobStopped: kept for
// that job's holder). Such a node keeps its standing while it comes back —
// its re-buy hold and its idle clock: it goes when it would have without
// the stop, and counts as the spare it will be once ready (see held).
// m.mu held.
func (m *Manager) restartingIdle(r *InstanceRecord) bool {
	if r.Busy || r.JobStopped || r.Termination != nil || r.Orphan || r.Instance.ID == "" {
		return false
	}
	if restartBooting(r) {
		return true
	}
	_, canRestart := m.providers[r.Instance.Provider].(Restarter)
	return r.Instance.Status == StatusIdle && (r.Instance.Stopped || m.busy("start/"+r.Instance.RequestID)) &&
		m.pol.OnStopped == OnStoppedRestart && canRestart
}

// checkAgents checks the agent of every ready instance each
// Policy.AgentCheckInterval; a failed check restarts the agent, and after
// Policy.AgentCheckFailures failures in a row the instance is released and
// replaced. A failed check also asks the provider whether the machine was
// stopped (Hot Aisle lists do not say). Instances no agent checks get a
// power check instead (checkPower). While the fleet's private key is
// missing (a restart without it) no check can run: EventAgentKeyMissing
// says so once per fleet, power checks stand in, and Acquire stops handing
// out a node left unchecked too long (agentUnverified). m.mu held.
func (m *Manager) checkAgents(now time.Time) {
	m.checkPower(now)
	if m.cfg.Agent == nil {
		return
	}
	for _, r := range m.insts {
		id := r.Instance.RequestID
		if (r.Instance.Status != StatusIdle && r.Instance.Status != StatusBusy) || r.Termination != nil ||
			m.busy("check/"+id) || now.Before(maxTime(r.Instance.Ready, m.agentChecked[id]).Add(m.pol.AgentCheckInterval)) {
			continue
		}
		agent := m.agentFor(r.Instance.Fleet)
		if agent != nil && m.keyMissing[r.Instance.Fleet] {
			// No check can log in without the fleet's key: said once per
			// fleet; Acquire stops handing out nodes left unchecked too
			// long (agentUnverified).
			m.keyMissingEvent(r.Instance.Fleet)
			continue
		}
		if agent == nil || m.free(taskCall) <= 0 {
			continue
		}
		m.agentChecked[id] = now
		inst, p, owner := cloneInst(r.Instance), m.providers[r.Instance.Provider], m.owner
		m.launch("check/"+id, taskAgent, m.pol.AgentTimeout, func(ctx context.Context) func(time.Time) {
			err := agent.Check(ctx, inst)
			var c agentCheck
			if err != nil {
				switch seen, gerr := p.Get(ctx, inst.ID); {
				case errors.Is(gerr, ErrNotFound), gerr == nil && otherOwners(inst, seen, owner):
					c.gone = true // or rented again: not this rental's machine
				case gerr == nil && seen.Stopped:
					c.stopped = true
				default:
					c.restarted, c.restartErr = true, agent.Start(ctx, inst)
				}
			}
			return func(now time.Time) { m.agentChecked2(id, err, c, now) }
		})
	}
}

// agentCheck is what a failed agent check found out about its instance.
type agentCheck struct {
	stopped    bool  // the provider says it is powered off
	gone       bool  // the provider says it does not exist
	restarted  bool  // the agent was started again
	restartErr error // and that failed
}

// agentChecked2 applies one agent check. m.mu held.
func (m *Manager) agentChecked2(id string, err error, c agentCheck, now time.Time) {
	r := m.insts[id]
	if r == nil || r.Termination != nil || !r.Instance.Running() {
		return
	}
	delete(m.agentVerdict, id)
	if err == nil {
		if r.AgentCheckFails > 0 {
			r.AgentCheckFails = 0
			m.dirtyI[id] = true
		}
		return
	}
	switch {
	case c.stopped:
		r.Instance.Stopped = true
		m.stoppedOutOfBand(r, now)
		return
	case c.gone:
		m.confirmGone(r, now) // a Get that answers not found again (past the visibility grace) closes it
		return
	case errors.Is(err, ErrAgentPathDown):
		m.agentVerdict[id] = false // not handed out: a job could not reach it either (tester AO)
		m.event(Event{Type: EventAgentUnhealthy, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			Err: err.Error(), Message: "the agent cannot be reached: a host on the way (a jump host) is down; the instance is not judged by it"})
		return
	}
	r.AgentCheckFails++
	m.dirtyI[id] = true
	ev := Event{Type: EventAgentUnhealthy, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID, Err: err.Error()}
	switch {
	case r.AgentCheckFails >= m.pol.AgentCheckFailures:
		ev.Message = fmt.Sprintf("the agent failed %d checks in a row; released and replaced", r.AgentCheckFails)
		m.event(ev)
		m.requestRelease(r, "agent unhealthy", m.policyFor(m.fleets[r.Instance.Fleet]), now, true)
		return
	case c.restarted && c.restartErr == nil:
		m.agentVerdict[id] = true // Start verified it healthy: handed out again (tester AO); the count of failures in a row goes on
		ev.Message = fmt.Sprintf("check %d failed; the agent was started again", r.AgentCheckFails)
	case c.restarted:
		ev.Message = fmt.Sprintf("check %d failed; starting the agent again failed too: %v", r.AgentCheckFails, c.restartErr)
	default:
		ev.Message = fmt.Sprintf("check %d failed", r.AgentCheckFails)
	}
	m.event(ev)
}

// labelWrong reports whether a listed instance's label differs from what
// the record says it should carry. m.mu held.
func (m *Manager) labelWrong(r *InstanceRecord, seen Instance) bool {
	if strings.Contains(r.Instance.RequestID, "-") { // a duplicate's record: its label names another request
		return false
	}
	return seen.RequestID != r.Instance.RequestID || seen.Fleet != r.Instance.Fleet || seen.Owner != m.owner ||
		seen.LabelError != "" // known by other evidence (Vultr's tags) while its label says otherwise
}

// fixLabels writes the label again on instances whose label was lost, edited
// or never written (Instance.LabelError), on providers that can (Labeler),
// at most once a minute per instance. m.mu held.
func (m *Manager) fixLabels(now time.Time) {
	for _, r := range m.insts {
		id := r.Instance.RequestID
		if !m.relabel[id] && r.Instance.LabelError == "" {
			continue
		}
		lp, ok := m.providers[r.Instance.Provider].(Labeler)
		if !ok || r.Instance.ID == "" || !r.Instance.Status.Active() || r.Instance.Fleet == "" || m.busy("label/"+id) ||
			now.Before(m.labelNext[id]) || m.free(taskCall) <= 0 {
			continue
		}
		m.labelNext[id] = now.Add(time.Minute)
		label, iid := Label{Owner: m.owner, Fleet: r.Instance.Fleet, RequestID: id}, r.Instance.ID
		m.launch("label/"+id, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
			err := lp.SetLabel(ctx, iid, label)
			return func(now time.Time) {
				r := m.insts[id]
				if r == nil {
					return
				}
				if err != nil {
					r.Instance.LabelError = err.Error()
					m.dirtyI[id] = true
					return
				}
				delete(m.relabel, id)
				r.Instance.LabelError, r.Instance.Owner = "", m.owner
				m.dirtyI[id] = true
				m.event(Event{Type: EventLabelRewritten, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: iid, Message: label.String()})
			}
		})
	}
}
