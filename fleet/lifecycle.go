package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Offers that missed a deadline are skipped by their fleet for offerPenalty;
// sold-out ones for soldOutPenalty (the catalog may still list them).
const (
	offerPenalty   = time.Hour
	soldOutPenalty = 10 * time.Minute
)

// avoidance is why and until when a fleet skips an offer.
type avoidance struct {
	until time.Time
	why   string // "an instance missed its deadline", "sold out"
}

// avoidOffer makes fleet skip offer o until until, for why. m.mu held.
func (m *Manager) avoidOffer(fleet string, o Offer, until time.Time, why string) {
	m.avoid[fleet+"|"+o.Key()] = avoidance{until: until, why: why}
}

// avoided reports whether fleet skips o now. m.mu held.
func (m *Manager) avoided(fleet string, o Offer, now time.Time) bool {
	return now.Before(m.avoid[fleet+"|"+o.Key()].until)
}

// provisionTimeout is how long an instance of o may take to be reported
// running: the offer's own deadline, else the policy's for its kind.
func (m *Manager) provisionTimeout(o Offer) time.Duration {
	switch {
	case o.ProvisionTimeout > 0:
		return o.ProvisionTimeout
	case o.BareMetal:
		return m.pol.BareMetalProvisionTimeout
	}
	return m.pol.ProvisionTimeout
}

// prepaidUntil is the last moment of r's prepaid minimum reservation worth
// waiting in: for an offer billed per minute with a minimum reservation
// longer than that (Hot Aisle: 8 hours of bare metal charged at the
// reserve; 30 or 60 minutes of a VM) the minimum's end less
// Policy.MinuteReleaseMargin. A release before then refunds nothing.
// Zero for hourly billing (Vultr: the deadline is judged within the billed
// hour, and the fleet moves on to another offer) and for an unknown
// creation time. m.mu held.
func (m *Manager) prepaidUntil(r *InstanceRecord) time.Time {
	o, c := r.Instance.Offer, r.Instance.Created
	if c.IsZero() || r.CreatedUnknown || o.BillingGranularity >= time.Hour || o.MinimumReservation <= o.BillingGranularity {
		return time.Time{}
	}
	return c.Add(o.MinimumReservation - min(m.pol.MinuteReleaseMargin, o.MinimumReservation))
}

// checkDeadlines releases instances that missed the provisioning or the
// agent deadline; the release is verified like any other. The provisioning
// deadline is judged on a listing made after it (a provider that cannot be
// listed — an outage — proves nothing: the server may have come up since
// the last listing). A record this
// process read from the store (a restart, a replica taking a fleet over) is
// judged only once a listing has shown it since (its stored status may be
// old: the machine may have come up while no process watched), and its
// agent deadline counts from the read at the earliest (the agent start of
// the process that died is begun again). An instance that misses its
// provisioning or agent deadline inside a prepaid minimum reservation
// (see prepaidUntil) is kept until the minimum's end less the margin, said
// once per deadline with EventDeadlineDeferred: releasing it earlier saves
// nothing, and it may still come up. An agent start failing with
// ErrAgentPathDown (a jump host down) does not count against the
// instance: its agent deadline counts from the last such failure.
// m.mu held.
func (m *Manager) checkDeadlines(now time.Time) {
	for _, r := range m.insts {
		var deadline time.Time
		var what string
		id := r.Instance.RequestID
		read, fromStore := m.readAt[id]
		switch {
		case r.Termination != nil || r.Instance.ID == "":
			continue
		case fromStore && !m.shown[id].After(read):
			continue
		case r.Instance.Status == StatusProvisioning:
			deadline, what = r.Instance.Created.Add(m.provisionTimeout(r.Instance.Offer)), "provisioning"
		case r.Instance.Status == StatusBooting && m.keyMissing[r.Instance.Fleet]:
			// Waiting for the spec to be applied again with its key: the
			// agent deadline counts from when the key is back.
			r.RunningSince = now
			continue
		case r.Instance.Status == StatusBooting:
			deadline, what = m.agentDeadline(r), "agent"
		default:
			continue
		}
		if now.Before(deadline) || (what == "provisioning" && m.shown[id].Before(deadline)) {
			continue // not yet, or no listing since the deadline has shown it still provisioning (one may leave it out)
		}
		if end := m.prepaidUntil(r); deadline.Before(end) {
			if key := what + "/" + id; !m.deadlineDeferred[key] {
				m.deadlineDeferred[key] = true
				timeout, until := m.provisionTimeout(r.Instance.Offer), "running"
				if what == "agent" {
					timeout, until = m.pol.AgentTimeout, "ready (agent started)"
				}
				m.event(Event{Type: EventDeadlineDeferred, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
					At: end, Message: fmt.Sprintf("%s deadline (%s) passed inside the prepaid minimum reservation; still waiting for it, released at %s if it is not %s by then (an earlier release refunds nothing)",
						what, timeout, end.UTC().Format(time.RFC3339), until)})
			}
			if deadline = end; now.Before(deadline) || (what == "provisioning" && m.shown[id].Before(deadline)) {
				continue
			}
		}
		m.forgetDeadlineDeferred(id)
		m.event(Event{Type: EventDeadlineMissed, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			At: deadline, Message: fmt.Sprintf("%s deadline passed; releasing", what)})
		m.requestRelease(r, what+" deadline", ReleaseNow, now, true)
		m.avoidOffer(r.Instance.Fleet, r.Instance.Offer, now.Add(offerPenalty), "an instance of it missed its deadline")
		m.missedDeadline(r.Instance.Fleet, r.Instance.Offer, now)
	}
}

// releaseIdle releases idle instances of fleets with an IdleTimeout when
// keeping them would start costing money (see idleReleaseAt), and keeps
// ReservedUntil current. With the ReleaseNow policy an instance idle for
// IdleTimeout is released at once, whatever it has paid for. Nodes that
// give way to a fleet refused their stock (see yieldHolds) are released
// too. m.mu held.
func (m *Manager) releaseIdle(now time.Time) {
	m.settleGrowth(now)
	keep, hold := m.held(now)
	for r, y := range m.yielded {
		if r.Termination != nil {
			m.yieldWaiting(r, y, now) // a release waiting for its minimum's end gives way to a refused fleet
		}
	}
	for _, r := range m.insts {
		if !r.Instance.Status.Active() || r.Instance.Status == StatusTerminating {
			continue
		}
		rt := m.reservedUntil(r, now)
		if !rt.Equal(r.Instance.ReservedUntil) {
			r.Instance.ReservedUntil = rt
			m.dirtyI[r.Instance.RequestID] = true
		}
		if at := m.idleReleaseDue(r, keep, hold, now); at.IsZero() || now.Before(at) {
			continue
		}
		if !m.marksRead(r.Instance.Fleet, now) {
			continue // a busy mark recorded through another replica may be waiting
		}
		m.noteIdled(r, now)
		f := m.fleets[r.Instance.Fleet]
		m.shrinkForIdle(f, r)
		// The moment is chosen (idleReleaseDue): the release is due now. By
		// default it is decided as at the reservation's end, which forces
		// it only inside a known minimum's last margin and never for an
		// unknown start (a refusal for the minimum makes it wait); the
		// other policies force it inside the minimum.
		policy := ReleaseNow
		if m.policyFor(f) == ReleaseAtReservationEnd {
			policy = ReleaseAtReservationEnd
		}
		if y, ok := m.yielded[r]; ok {
			m.yieldRelease(r, y, policy, now)
			continue
		}
		m.requestRelease(r, "idle", policy, now, true)
	}
}

// shrinkForIdle lowers fleet f's Nodes for the idle release of r, before
// it (or for r, idle, stopped or gone out of band: releaseStopped,
// markGone): by one, and to the members the fleet keeps (creates under way
// counted) when that is fewer, never below MinNodes. A fleet may want more
// members than it has (a growth given up when the offer sold out, a create
// that failed): lowered by one only, it would still be short once r is
// gone and would buy a new node, with a new minimum, in place of the one
// it released for want of a job. m.mu held.
func (m *Manager) shrinkForIdle(f *FleetRecord, r *InstanceRecord) {
	left := m.memberCount(f.Spec.Name)
	if isMember(r) {
		left--
	}
	f.Spec.Nodes = max(f.Spec.MinNodes, min(f.Spec.Nodes-1, left))
	m.dirtyF[f.Spec.Name] = true
}

// idleReleaseDue is when releaseIdle releases r (see idleReleaseAt; with
// the ReleaseNow policy once idle for IdleTimeout), zero when it does not
// (see idleReleasable). keep and hold are the re-buy hold's (see held).
// m.mu held.
func (m *Manager) idleReleaseDue(r *InstanceRecord, keep map[*InstanceRecord]bool, hold map[*InstanceRecord]time.Duration, now time.Time) time.Time {
	if !m.idleReleasable(r) {
		return time.Time{}
	}
	f := m.fleets[r.Instance.Fleet]
	if m.policyFor(f) == ReleaseNow {
		return m.idleFrom(r).Add(f.Spec.IdleTimeout)
	}
	return m.idleReleaseAt(r, f.Spec.IdleTimeout, keep[r], hold[r], now)
}

// idleReleasable reports whether releaseIdle may release r as things are
// now: it is idle (or boots again after a restart, see restartBooting),
// not busy, not handed out by Acquire (its busy mark not carried out yet),
// not released already, not wanted by the growth an Apply asked for (see
// growth.go), and its fleet has an IdleTimeout and more nodes, and more
// members (creates under way counted), than its MinNodes: a release that
// left fewer members than MinNodes would buy a new node in its place. A
// node it may not release is kept whatever its re-buy hold says. m.mu
// held.
func (m *Manager) idleReleasable(r *InstanceRecord) bool {
	f := m.fleets[r.Instance.Fleet]
	return (r.Instance.Status == StatusIdle || restartBooting(r)) && !r.Busy && !m.acquired[r.Instance.RequestID] && r.Termination == nil &&
		f != nil && f.Spec.IdleTimeout > 0 && f.Spec.Nodes > f.Spec.MinNodes && m.memberCount(f.Spec.Name) > f.Spec.MinNodes &&
		!(f.growing() && idleAtGrowth(r, f))
}

// restartBooting reports whether r boots again after a restart out of
// band (it was ready before: restarted keeps Ready). No job can be waiting
// for it (Acquire hands out idle nodes only), so its idle release is not
// put off until its agent is up: a restart that ends after its minimum's
// end (an hour's last safe moment) would buy more.
func restartBooting(r *InstanceRecord) bool {
	return r.Instance.Status == StatusBooting && !r.Instance.Ready.IsZero()
}

// idleReleaseAt is when an idle instance is released so that no billing
// unit nobody uses is bought:
//
//   - hourly billing (Vultr): at the last safe moment of the billed hour it
//     is in, or of its minimum reservation when that is longer (the end
//     less Policy.HourlyReleaseMargin) — the hour is
//     paid anyway, and keeping it longer buys the next one, which costs as
//     much as buying a new machine later. An instance that goes idle after
//     that moment is released at once: a delete that lands before the hour
//     ends saves the next hour — unless less than boundarySlack (10 s, a
//     call's latency) is left, when no delete can land in it: then it is
//     kept, acquirable, to the next hour's last safe moment (that hour is
//     bought either way). IdleTimeout plays no part: releasing earlier inside a paid
//     hour saves nothing. A node whose hours this calendar month (UTC)
//     have reached its offer's monthly cap (Offer.MonthlyCap: Vultr bills
//     at most monthly_cost a month, 730 h of a Cloud GPU, 672 h otherwise)
//     keeps the rest of the month's hours for nothing (paidUntil): it is
//     kept, acquirable, to the last safe moment before its first hour that
//     starts in the next month. Nor is it released while the provider refuses
//     deletes after the start of its running (Offer.DeleteLock, counted
//     from the last listing that showed it not running): a node ready late
//     in its hour (bare metal boots ~40 min) stays acquirable until then,
//     and is kept to the next hour's last safe moment when no delete can
//     land in its hour.
//   - start unknown (adopted from a list that gives none; Hot Aisle):
//     IdleTimeout after it went idle, without force (see requestRelease):
//     the provider's refusal for the minimum keeps it until the minimum
//     is over (minimumNotOver).
//   - per-minute billing with a minimum (Hot Aisle): an instance whose job
//     ended before its minimum ends is released when it ends (less
//     Policy.MinuteReleaseMargin; paid anyway) — IdleTimeout does not carry
//     it past, except for a growth met inside the minimum (the node was
//     idle at the Apply): then it is kept growthNotice (IdleTimeout when
//     shorter) after the growth was met at least; one idle after that, or
//     never used yet, is released IdleTimeout after it went idle, not
//     before the minimum ends (less
//     the margin); each idle minute past the minimum costs. The re-buy
//     hold (see held and bestRebuy) keeps the first few idle nodes in
//     Acquire's order for a while past their minimum, as many and as long
//     as would have cost least on the fleet's recent jobs (when that saves
//     at least a minimum), never longer than the minimum (the ski-rental
//     break-even), and never less than IdleTimeout after going idle; the
//     other idle nodes, and all of them with Policy.RebuyHoldOff, are
//     released once their minimum and IdleTimeout have passed. A release
//     past the minimum that falls on a billed minute's boundary goes
//     boundarySlack (10 s) before it (beforeMinuteBoundary), so that the
//     delete lands inside the minute already paid.
//
// m.mu held.
func (m *Manager) idleReleaseAt(r *InstanceRecord, idleTimeout time.Duration, spare bool, hold time.Duration, now time.Time) time.Time {
	o, c, idle := r.Instance.Offer, r.Instance.Created, m.idleFrom(r)
	if r.CreatedUnknown || c.IsZero() {
		return idle.Add(idleTimeout)
	}
	if o.BillingGranularity >= time.Hour {
		// Not before the provider takes deletes again (the delete lock
		// after it started running): a node that became ready late in its
		// hour stays acquirable until then, and goes at once if a delete can
		// still land in the hour, or at the next hour's last safe moment if
		// none can (that hour is bought either way).
		from := now
		if o.DeleteLock > 0 && !r.RunningSince.IsZero() {
			lock := m.activeFrom(r).Add(o.DeleteLock)
			if r.PendingSeen.Equal(c) {
				// Its running began unseen since the create (a restart, an
				// adoption): the lock may still hold from when it was first
				// seen running. The node stays acquirable that long, but no
				// later than a minute before its hour ends, when deletes are
				// tried (a refused one again until the hour's end): if the
				// lock holds past the hour, the next one is bought anyway.
				lock = maxTime(lock, minTime(r.RunningSince.Add(o.DeleteLock), m.paidUntil(r, now).Add(-time.Minute)))
			}
			from = maxTime(from, lock)
		}
		if idle.After(r.IdleSince) {
			// Kept for a growth until it was settled (growth.go): the
			// caller has growthNotice (IdleTimeout when shorter) from then
			// to take the node it asked for, to the last safe moment of the
			// hour that time ends in, or of the next when it ends past it.
			t, margin := idle.Add(min(idleTimeout, growthNotice)), m.hourlyMargin(r, now)
			safe := m.paidUntil(r, t).Add(-margin)
			if t.After(safe) {
				safe = safe.Add(o.BillingGranularity)
			}
			from = maxTime(from, safe)
		}
		// paidUntil counts an hour less than boundarySlack from its end as
		// bought too (no delete can land in this one any more): the node
		// then stays acquirable to that hour's last safe moment (tester AN).
		return maxTime(from, m.paidUntil(r, from).Add(-m.hourlyMargin(r, now)))
	}
	minEnd := c.Add(o.MinimumReservation)
	// A job ended inside the minimum: no idle timer carries the node past it.
	// A node never used yet keeps IdleTimeout (a short minimum may end
	// before a job could take it).
	// A node idle at a growth counts from when the growth was settled
	// (idleFrom), and as never used if it never was.
	inside := r.IdleSince.Before(minEnd) && r.IdleSince.After(r.Instance.Ready) && idle.Before(minEnd)
	if m.pol.RebuyHoldOff || !spare {
		safe := minEnd.Add(-min(m.minuteMargin(r, now), o.MinimumReservation))
		if inside && idle.After(r.IdleSince) {
			// Kept for a growth met inside the minimum: the caller has
			// growthNotice (IdleTimeout when shorter) from then to take the
			// node it asked for, past the minimum's last safe moment when
			// that comes first (not gone in the pass that saw the new node
			// ready).
			return m.beforeMinuteBoundary(r, maxTime(maxTime(now, safe), idle.Add(min(idleTimeout, growthNotice))))
		}
		if inside {
			return maxTime(now, safe)
		}
		return m.beforeMinuteBoundary(r, maxTime(safe, idle.Add(idleTimeout)))
	}
	return m.beforeMinuteBoundary(r, maxTime(maxTime(minEnd, idle).Add(hold), idle.Add(idleTimeout)))
}

// beforeMinuteBoundary moves a release planned at t past the minimum of a
// per-minute-billed instance r to boundarySlack before the billed minute
// that starts at or just before t: a hold of whole minutes ends on a
// minute boundary, and a delete landing a moment after it bills the next
// minute. Other times are kept. m.mu held.
func (m *Manager) beforeMinuteBoundary(r *InstanceRecord, t time.Time) time.Time {
	o, c := r.Instance.Offer, r.Instance.Created
	g := o.BillingGranularity
	if g <= 0 || g >= time.Hour || c.IsZero() || !t.After(c.Add(o.MinimumReservation)) {
		return t
	}
	if off := t.Sub(c) % g; off < boundarySlack {
		return t.Add(-off - boundarySlack)
	}
	return t
}

// agentDeadline is when a booting instance's agent must be up: AgentTimeout
// after it started running, or after this process read its record (the
// agent start of a process that died is begun again), or after the last
// start that failed because the way to the agent is down (a jump host:
// ErrAgentPathDown is not the machine's fault). m.mu held.
func (m *Manager) agentDeadline(r *InstanceRecord) time.Time {
	id := r.Instance.RequestID
	return maxTime(maxTime(r.RunningSince, m.readAt[id]), m.agentPathDown[id]).Add(m.pol.AgentTimeout)
}

// missedDeadline counts a fleet's consecutive deadline misses; after
// Policy.MaxDeadlineMisses the fleet stops creating (each miss may have paid
// a minimum reservation) until its spec is applied again. m.mu held.
func (m *Manager) missedDeadline(fleet string, o Offer, now time.Time) {
	m.deadlineMisses[fleet]++
	limit := m.pol.MaxDeadlineMisses
	if o.MinimumReservation > time.Hour {
		limit = 1 // each new try prepays hours (Hot Aisle bare metal: 8)
	}
	f := m.fleets[fleet]
	if f == nil || f.Stalled || m.deadlineMisses[fleet] < limit {
		return
	}
	f.Stalled = true
	m.dirtyF[fleet] = true
	m.event(Event{Type: EventFleetStalled, Fleet: fleet, Message: fmt.Sprintf(
		"%d instances in a row missed their deadline; no more creates until the fleet is applied again", m.deadlineMisses[fleet])})
}

// keyMissingEvent says once per fleet why its agents wait. m.mu held.
func (m *Manager) keyMissingEvent(fleet string) {
	if m.keyMissing[fleet] && !m.keyMissingSaid[fleet] {
		m.keyMissingSaid[fleet] = true
		m.event(Event{Type: EventAgentKeyMissing, Fleet: fleet, Message: "the fleet's private key is not stored; apply the spec again with its PrivateKey: until then no agent is started or checked, and Acquire stops handing out nodes whose agent has gone unchecked for AgentCheckInterval × AgentCheckFailures"})
	}
}

// agentFor returns the agent for a fleet (keyed with the fleet's private key
// when the agent supports it), nil for none. m.mu held.
func (m *Manager) agentFor(fleet string) Agent {
	if m.cfg.Agent == nil {
		return nil
	}
	if a, ok := m.keyedAgents[fleet]; ok {
		return a
	}
	a := m.cfg.Agent
	if f := m.fleets[fleet]; f != nil && !f.Spec.PrivateKey.IsZero() {
		if ka, ok := a.(KeyedAgent); ok {
			a = ka.WithKey(f.Spec.PrivateKey)
		}
	}
	m.keyedAgents[fleet] = a
	return a
}

// startAgents starts the agent on booting instances, one task per
// instance, retried with backoff until the agent deadline. Each attempt
// is bounded (agentAttemptTimeout) so that one attempt stuck on a dead
// path (a jump connection that dropped) cannot use up the whole
// deadline. m.mu held.
func (m *Manager) startAgents(now time.Time) {
	for _, r := range m.insts {
		id := r.Instance.RequestID
		if r.Instance.Status != StatusBooting || r.Termination != nil || m.busy("agent/"+id) || now.Before(m.agentNext[id]) {
			continue
		}
		if m.keyMissing[r.Instance.Fleet] {
			m.keyMissingEvent(r.Instance.Fleet)
			continue
		}
		agent := m.agentFor(r.Instance.Fleet)
		if agent == nil {
			m.markReady(r, now)
			continue
		}
		ctx, cancel := context.WithCancel(m.bgCtx)
		m.agentCancel[id] = cancel
		inst := cloneInst(r.Instance)
		m.event(Event{Type: EventAgentStarting, Fleet: inst.Fleet, Provider: inst.Provider, InstanceID: inst.ID})
		m.launchUnder(ctx, "agent/"+id, taskAgent, m.agentAttemptTimeout(), func(ctx context.Context) func(time.Time) {
			err := agent.Start(ctx, inst)
			return func(now time.Time) {
				cancel()
				delete(m.agentCancel, id)
				m.agentDone(id, err, now)
			}
		})
	}
}

// forgetInstance tells the Agent that r's instance is gone, when it keeps
// state per rental (InstanceForgetter). m.mu held.
func (m *Manager) forgetInstance(r *InstanceRecord) {
	f, ok := m.cfg.Agent.(InstanceForgetter)
	if !ok || r.Instance.ID == "" {
		return
	}
	inst := cloneInst(r.Instance)
	m.launch("forget/"+inst.RequestID, taskAgent, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
		if err := f.ForgetInstance(ctx, inst); err != nil {
			m.log.Warn("gpufleet: the agent could not forget a terminated instance", "instance", inst.ID, "err", err)
		}
		return func(time.Time) {}
	})
}

// cancelAgent stops an agent start under way for a request id. m.mu held.
func (m *Manager) cancelAgent(id string) {
	if cancel, ok := m.agentCancel[id]; ok {
		cancel()
	}
}

// agentDone applies the outcome of one agent start. m.mu held.
func (m *Manager) agentDone(id string, err error, now time.Time) {
	r := m.insts[id]
	if r == nil || r.Instance.Status != StatusBooting || r.Termination != nil {
		return
	}
	if err == nil {
		m.markReady(r, now)
		return
	}
	r.AgentTries++
	wait := backoff(r.AgentTries, 15*time.Second, 2*time.Minute)
	m.agentNext[id] = now.Add(wait)
	r.Instance.LastError = err.Error()
	m.dirtyI[id] = true
	msg := fmt.Sprintf("attempt %d failed; retrying", r.AgentTries)
	if errors.Is(err, ErrAgentPathDown) {
		m.agentPathDown[id] = now
		msg = fmt.Sprintf("attempt %d failed: the way to the agent (a jump host) is down; not counted against the instance: its agent deadline (%s) counts from when the way is back; retrying",
			r.AgentTries, m.pol.AgentTimeout)
	}
	m.event(Event{Type: EventAgentFailed, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
		Err: err.Error(), At: now.Add(wait), Message: msg})
}

// agentAttemptTimeout bounds one agent start attempt: a third of
// Policy.AgentTimeout, so that an attempt stuck on a path that died (a
// dropped jump connection dialled again and again) is given up and a new
// one, on a new connection, made well before the agent deadline. An
// agent start is idempotent (an agent already healthy answers at once), so
// an attempt cut while the agent was coming up loses nothing.
func (m *Manager) agentAttemptTimeout() time.Duration {
	return max(m.pol.AgentTimeout/3, time.Second)
}

// forgetDeadlineDeferred forgets that id's deadlines were said deferred.
// m.mu held.
func (m *Manager) forgetDeadlineDeferred(id string) {
	delete(m.deadlineDeferred, "provisioning/"+id)
	delete(m.deadlineDeferred, "agent/"+id)
}
