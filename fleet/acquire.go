package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrNoIdle is returned by Acquire when the fleet has no idle instance.
var ErrNoIdle = errors.New("gpufleet: no idle instance")

// Acquire picks the fleet's idle instance whose use saves the most — the
// one with the most paid time left (the rest of its billed hour on Vultr,
// of its minimum reservation on Hot Aisle), among equals the cheaper to
// keep (the cheaper plan), then the oldest — marks it
// busy at once (no other Acquire gets it) and returns it, with a token of
// this hand-out (Instance.HandOut). Give it back with GiveBack(inst) when
// its job ends, or Release it: GiveBack frees the node only while this
// hand-out is its current one, so a give-back repeated late cannot free it
// under the next job (MarkIdle, which carries no token, would). This is how
// an orchestrator places jobs without stranding paid time.
//
// What counts is what was recorded, carried out by the loop or not: a node
// given back with GiveBack (or MarkIdle) is handed out again at once (its
// idle mark need not be carried out first), and a node whose Release, Delete or MarkBusy
// (or Acquire) is recorded after its last idle mark counts as taken, and so
// does a node whose job ended with a stop out of band until its holder's
// GiveBack or MarkIdle (InstanceRecord.JobStopped). Only a
// node that can run a job now is handed out: ready (idle or busy, agent
// started), no release decided, not powered off (Instance.Stopped, or a
// power-on under way), not an orphan, in the fleet's VPC for a
// PlacementCluster fleet on a provider with VPCs (its attach confirmed, or
// given up with EventVPCUnavailable; or, while the fleet's VPC create is
// refused and retried, without one), and, with an Agent, its agent known
// healthy: its last check passed, or failed and the agent was started again
// and verified (EventAgentUnhealthy "the agent was started again"); not
// while a check could not reach it through a host on the way (a jump host,
// ErrAgentPathDown); and, on a Manager alone, not a node read from the
// Store at start before a listing of this Manager has shown its server
// (the Store may be behind the cloud when Close could not write: a
// released server is not handed out; see CloseContext). A node whose
// agent cannot be checked because the fleet's private key is missing (a
// restart without it: EventAgentKeyMissing) is
// handed out only within Policy.AgentCheckInterval ×
// Policy.AgentCheckFailures of its last passed check or of the restart
// (the time checks would take to find its agent dead); past that Acquire
// answers ErrNoIdle saying so, until the spec is applied again with its
// PrivateKey.
//
// Errors: ErrNotFound for an unknown fleet or one whose Delete is recorded
// (whether carried out or not: a fleet being deleted, its nodes waiting for
// the end of their minimum, hands out nothing and cannot be grown with
// Apply), ErrNoIdle when no node is idle, ErrClosed. With replicas, only the
// replica holding the fleet's lease hands out its nodes (so that none is
// handed out twice); another replica answers ErrNoIdle wrapping a
// *LeaseHeldError that names the holder (errors.As), or ErrNoIdle alone
// while no replica holds it (ErrNotFound for a fleet unknown or being
// deleted in the shared store; ErrNoIdle wrapping the store's error when
// the shared store cannot be read to tell: a failed read, or one that ctx
// or Policy.CallTimeout cuts, never answers ErrNotFound). The holder
// counts the marks recorded through any replica: when its own view has no
// idle node it reads the fleet's stored intents once, so that a node given
// back with GiveBack or MarkIdle through another replica is handed out
// before that mark is carried out. The hand-out is stored with the node's
// record (InstanceRecord.HandOut), so that GiveBack's check holds through
// any replica and after the holder's death.
// The holder records the busy mark in the
// shared store before it returns the node (a node whose Release or MarkBusy
// was recorded through any replica counts as taken), so that the replica
// taking the fleet over after the holder's death does not hand it out
// again; when that write fails, Acquire returns an error answering
// ErrNotRecorded (and wrapping the store's error) and the node stays idle.
// A write whose answer was lost but which the store committed is found by
// a read of the fleet's intents and the node handed out; when that read
// fails too, the error is returned and the mark is voided: an IntentVoid
// is stored (at once, else by the loop until it is), so that no replica
// carries the mark out should the store have it, or the one that did puts
// the node back to idle (Intent.Acquire). Once the mark is written the
// holder checks that the lease it picked the node under is still its own
// and valid: a replica whose write outlasted its lease (a stalled
// connection) hands nothing out, since the next holder may have handed the
// node out meanwhile; it answers ErrNoIdle wrapping the new holder's
// *LeaseHeldError (ErrNoIdle alone when the store names none) and voids
// its mark.
func (m *Manager) Acquire(ctx context.Context, fleet string) (Instance, error) {
	if m.closed.Load() {
		return Instance{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return Instance{}, err
	}
	if m.rep != nil {
		if !m.holdsNow(fleet) {
			return Instance{}, m.acquireElsewhere(ctx, fleet)
		}
		return m.acquireStored(ctx, fleet)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() { // Close carries out what was queued before it
		return Instance{}, ErrClosed
	}
	best, err := m.pickIdle(fleet, nil, nil)
	if err != nil {
		return Instance{}, err
	}
	token := NewRequestID()
	m.intents.push(intent{kind: intentBusy, name: best.Instance.RequestID, token: token})
	m.wake()
	inst := handedOut(best)
	inst.HandOut = token
	return inst, nil
}

// recordHandOut is the hand-out instance id is under by its record
// ("" for none) and whether a job holds it by its record (holdOf: for a
// node whose release is decided, the hand-out and job it was decided
// under, until given back), for foldMarks. m.mu held.
func (m *Manager) recordHandOut(id string) (handOut string, held bool) {
	if r := m.insts[id]; r != nil {
		return holdOf(r)
	}
	return "", false
}

// pickIdle chooses the idle instance of fleet Acquire hands out (none in
// skip) and reserves it (no other Acquire gets it until its busy intent
// is carried out). A node is idle by its record and then by the intents
// recorded and not yet carried out, in their order: those queued and
// (replica mode) stored, which Acquire read from the store. m.mu held.
func (m *Manager) pickIdle(fleet string, skip map[string]bool, stored []Intent) (*InstanceRecord, error) {
	m.intents.mu.Lock()
	applied, deleted := m.intents.fleetState(fleet)
	m.intents.mu.Unlock()
	marks, _, storedDelete := foldMarks(m.pendingOps(fleet, stored), fleet, m.recordHandOut)
	f, ok := m.fleets[fleet]
	if !ok || deleted || storedDelete || f.Deleting {
		if applied && !deleted && !storedDelete && !ok {
			return nil, classed(ErrNoIdle, "fleet %s (just applied)", fleet)
		}
		return nil, classed(ErrNotFound, "fleet %s", fleet)
	}
	now := m.clock.Now()
	var best *InstanceRecord
	unchecked, unlisted := 0, 0
	for _, r := range m.byFleet[fleet] {
		id := r.Instance.RequestID
		if !m.runnable(r) || skip[id] || m.picking[id] > 0 {
			continue
		}
		if m.notListedSinceRead(r) {
			unlisted++
			continue
		}
		if m.agentUnverified(r, now) {
			unchecked++
			continue
		}
		busy := r.Busy || r.Instance.Status == StatusBusy || r.JobStopped // a stopped job's node: its holder gives it back
		switch marks[id] {
		case markReleased:
			continue
		case markBusy:
			busy = true
		case markIdle:
			busy = false
		}
		if busy {
			continue
		}
		if best == nil || m.handOutFirst(r, best, now) {
			best = r
		}
	}
	if best == nil && unchecked > 0 {
		return nil, classed(ErrNoIdle, "fleet %s (%d node(s) not handed out: their agents cannot be checked without the fleet's private key; apply the spec again with its PrivateKey)", fleet, unchecked)
	}
	if best == nil && unlisted > 0 {
		return nil, classed(ErrNoIdle, "fleet %s (%d node(s) read from the store not handed out before a listing shows them)", fleet, unlisted)
	}
	if best == nil {
		return nil, classed(ErrNoIdle, "fleet %s", fleet)
	}
	m.acquired[best.Instance.RequestID] = true
	return best, nil
}

// notListedSinceRead reports whether r was read from the Store by this
// Manager (one alone, at start) and no listing of its provider has shown
// its server since. Its record may be older than what happened to the
// server: a release the provider accepted while the Store refused writes,
// which Close could not store, leaves it idle in the Store while the
// server is destroyed (tester AP). Replicas read the records of a fleet
// they take over with the intents of every call recorded before it, which
// the replica that died had stored before it answered. m.mu held.
func (m *Manager) notListedSinceRead(r *InstanceRecord) bool {
	if m.rep != nil {
		return false
	}
	read, fromStore := m.readAt[r.Instance.RequestID]
	return fromStore && m.shown[r.Instance.RequestID].Before(read)
}

// handOutFirst reports whether Acquire hands out a before b (handOutOrder).
// m.mu held.
func (m *Manager) handOutFirst(a, b *InstanceRecord, now time.Time) bool {
	return m.handOutOrder(a, b, now) < 0
}

// handOutOrder is Acquire's order, negative when a goes before b: the more
// paid time left (paidUntil), then the cheaper to keep (keepCost: among
// nodes of equal paid time, the cheaper plan), then the older, then the
// request id. The re-buy hold keeps its spares in this order too (held).
// m.mu held.
func (m *Manager) handOutOrder(a, b *InstanceRecord, now time.Time) int {
	if x := m.paidUntil(b, now).Compare(m.paidUntil(a, now)); x != 0 {
		return x
	}
	if x := m.byKeepCost(a, b, now); x != 0 {
		return x
	}
	if x := a.Instance.Created.Compare(b.Instance.Created); x != 0 {
		return x
	}
	return cmp.Compare(a.Instance.RequestID, b.Instance.RequestID)
}

// runnable reports whether r's machine can run a job now: ready (idle or
// busy), no release decided, powered on (not Stopped, no power-on under
// way), claimed by its fleet (not an orphan), in its cluster fleet's VPC
// (vpcPending), and, with an Agent, its agent known healthy (agentHealthy).
// m.mu held.
func (m *Manager) runnable(r *InstanceRecord) bool {
	st := r.Instance.Status
	return (st == StatusIdle || st == StatusBusy) && r.Termination == nil && r.Instance.ID != "" &&
		!r.Instance.Stopped && !m.busy("start/"+r.Instance.RequestID) && !r.Orphan &&
		!m.vpcPending(r) && (m.cfg.Agent == nil || m.agentHealthy(r))
}

// spareable reports whether Acquire could hand r out, busy or not, but
// for a first listing of this process still to come (notListedSinceRead:
// a restart's, which ends at its first listing): runnable, its agent not
// unverified, and not kept for the holder of a job a stop ended
// (JobStopped). The re-buy hold keeps only such nodes as spares (tester
// AR); one read from the store before the first listing is kept, or a
// restart would release the spare it had (tester AT). m.mu held.
func (m *Manager) spareable(r *InstanceRecord, now time.Time) bool {
	return m.runnable(r) && !m.agentUnverified(r, now) && !r.JobStopped
}

// vpcPending reports whether r belongs to a PlacementCluster fleet on a
// provider with VPCs and its attach to the fleet's VPC is not settled yet
// (InstanceRecord.VPCDone: confirmed by listing the server's VPCs, or given
// up with EventVPCUnavailable). A cluster job on it could not reach its
// peers' private addresses: Vultr refuses the attach while the server is
// locked after boot, so a node is ready minutes before it is in the VPC
// (tester AO). Not while the fleet's VPC cannot be created (its create
// refused, retried with backoff, EventVPCUnavailable): the fleet's nodes
// run without it meanwhile, as they do when an attach is given up.
// m.mu held.
func (m *Manager) vpcPending(r *InstanceRecord) bool {
	f := m.fleets[r.Instance.Fleet]
	if f == nil || f.Spec.Placement != PlacementCluster || r.VPCDone {
		return false
	}
	if f.VPC == nil && m.fleetFails["vpc/"+f.Spec.Name] > 0 {
		return false // its VPC create was refused (EventVPCUnavailable): it runs without one meanwhile (tester AR)
	}
	_, vpcs := m.providers[r.Instance.Provider].(VPCProvider)
	return vpcs
}

// agentHealthy reports whether r's agent is known healthy: by the latest
// agent check's verdict in this process (agentVerdict: a check whose path
// was down vouches for nothing; a failed check whose restart of the agent
// succeeded — Agent.Start verifies health — vouches for it), else by its
// record (no failed check since the last that passed). m.mu held.
func (m *Manager) agentHealthy(r *InstanceRecord) bool {
	if v, ok := m.agentVerdict[r.Instance.RequestID]; ok {
		return v
	}
	return r.AgentCheckFails == 0
}

// agentUnverified reports whether r's agent has gone unchecked too long
// to be handed out: its fleet's private key is missing (a restart without
// it, AgentKeyMissing), so no agent check can run, and its last passed
// check (or, for a record read from the store, the read) is older than
// Policy.AgentCheckInterval × Policy.AgentCheckFailures — the time in
// which checks would have found a dead agent and released the node. Until
// then the node is handed out (its agent is not known unhealthy); past
// that its agent's health is unknown, and Acquire hands out nothing that
// may not run a job. m.mu held.
func (m *Manager) agentUnverified(r *InstanceRecord, now time.Time) bool {
	if m.cfg.Agent == nil || !m.keyMissing[r.Instance.Fleet] {
		return false
	}
	id := r.Instance.RequestID
	last := maxTime(maxTime(r.Instance.Ready, m.agentChecked[id]), m.readAt[id])
	return !now.Before(last.Add(time.Duration(m.pol.AgentCheckFailures) * m.pol.AgentCheckInterval))
}

// pendingOps is the intents recorded and not yet carried out, as Acquire
// counts them: those queued (replica mode: not yet carried out from the
// store) and those of stored, fleet's intents read from the store (a busy
// mark whose Acquire answered an error is none; its void puts back to
// idle a node that mark made busy). m.mu held.
func (m *Manager) pendingOps(fleet string, stored []Intent) []intent {
	m.intents.mu.Lock()
	queued := slices.Clone(m.intents.ops)
	m.intents.mu.Unlock()
	if m.rep == nil {
		return queued
	}
	now := m.clock.Now()
	voids := map[string]bool{} // Acquire tokens voided by a stored IntentVoid
	for _, in := range stored {
		if in.Kind == IntentVoid && in.Fleet == fleet && in.Seq > m.rep.applied[fleet] {
			voids[in.Acquire] = true
		}
	}
	ops := queued[:0]
	seen := map[int64]bool{}
	for _, op := range queued {
		if op.seq != 0 && op.seq <= m.rep.applied[op.fleet] {
			continue // carried out from the store: the record has it
		}
		seen[op.seq] = true
		if op.kind == intentBusy && op.token != "" && (voids[op.token] || m.isVoided(op.fleet, op.token, now)) {
			continue
		}
		ops = append(ops, op)
	}
	for _, in := range stored {
		if in.Fleet != fleet || in.Seq <= m.rep.applied[fleet] || seen[in.Seq] {
			continue
		}
		if in.Kind == IntentBusy && in.Acquire != "" && (voids[in.Acquire] || m.isVoided(fleet, in.Acquire, now)) {
			continue // a voided busy mark
		}
		op := intent{seq: in.Seq, fleet: in.Fleet, name: in.InstanceID}
		switch in.Kind {
		case IntentVoid: // undoes a busy mark carried out: the node is idle
			if r := m.insts[in.InstanceID]; r == nil || r.AcquiredBy != in.Acquire {
				continue
			}
			op.kind = intentIdle
		case IntentDelete:
			op.kind, op.name = intentDelete, in.Fleet
		case IntentRelease:
			op.kind = intentRelease
		case IntentBusy:
			op.kind, op.token = intentBusy, in.Acquire
		case IntentIdle:
			op.kind, op.token = intentIdle, in.Acquire // a GiveBack's: its hand-out
		default:
			continue
		}
		ops = append(ops, op)
	}
	return ops
}

// handedOut is the Instance Acquire returns for r: a copy, busy.
func handedOut(r *InstanceRecord) Instance {
	inst := cloneInst(r.Instance)
	inst.Status = StatusBusy
	return inst
}

// paidUntil is the end of what r has paid for: its billed hour or its
// minimum reservation, the later (hourly; an hour less than boundarySlack
// from its end counts its next one as bought, since no delete can land
// before it any more: tester AX), or its minimum reservation (per minute;
// now once it is over). An hourly node whose hours this calendar month
// (UTC) have reached the offer's monthly cap (Offer.MonthlyCap: Vultr
// bills at most monthly_cost a month) keeps the rest of the month's hours
// for nothing: paid until its first hour that starts in the next month
// (capFreeUntil). m.mu held.
func (m *Manager) paidUntil(r *InstanceRecord, now time.Time) time.Time {
	o, c := r.Instance.Offer, r.Instance.Created
	if c.IsZero() || r.CreatedUnknown {
		return now
	}
	if g := o.BillingGranularity; g >= time.Hour {
		end := c.Add(time.Duration(int64(now.Sub(c)/g)+1) * g)
		if end.Sub(now) < boundarySlack {
			end = end.Add(g)
		}
		return capFreeUntil(r, maxTime(end, c.Add(o.MinimumReservation)))
	}
	return maxTime(now, c.Add(o.MinimumReservation))
}

// holdsNow reports whether this replica may act on fleet now.
func (m *Manager) holdsNow(fleet string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holds(fleet, m.clock.Now())
}

// acquireElsewhere is Acquire's answer on a replica that does not hold
// fleet: ErrNotFound when the shared store has no such fleet or has it
// being deleted (its record Deleting, or a Delete of it recorded), else
// ErrNoIdle with the holder's lease when there is one. A failed read (the
// store's error, the context's end) is not an absent record: unless what
// was read shows the fleet being deleted, it answers ErrNoIdle wrapping
// the read's error (whether the fleet exists, or is being deleted, is not
// known).
func (m *Manager) acquireElsewhere(ctx context.Context, fleet string) error {
	ctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
	defer cancel()
	rec, err := m.storedFleetRecord(ctx, fleet)
	ins, ierr := m.rep.ls.Intents(ctx, fleet)
	recorded := func(k IntentKind) bool {
		return ierr == nil && slices.ContainsFunc(ins, func(in Intent) bool { return in.Kind == k })
	}
	var readErr error // the reads that failed (an absent record is no failure)
	switch recFailed := err != nil && !errors.Is(err, ErrNotFound); {
	case recFailed && ierr != nil:
		readErr = fmt.Errorf("reading its record: %w; reading its intents: %w", err, ierr)
	case recFailed:
		readErr = fmt.Errorf("reading its record: %w", err)
	case ierr != nil:
		readErr = fmt.Errorf("reading its intents: %w", ierr)
	}
	switch {
	case (err == nil && rec.Deleting) || recorded(IntentDelete):
		return classed(ErrNotFound, "fleet %s (being deleted)", fleet)
	case readErr != nil:
		return fmt.Errorf("gpufleet: fleet %s: %w here (the shared store could not be read: %w)", fleet, unprefixed(ErrNoIdle), readErr)
	case err != nil && !recorded(IntentApply):
		return classed(ErrNotFound, "fleet %s", fleet)
	}
	leases, err := m.rep.ls.Leases(ctx)
	if err != nil {
		return fmt.Errorf("gpufleet: fleet %s: %w (reading its lease: %v)", fleet, ErrNoIdle, err)
	}
	for _, l := range leases {
		if l.Name == FleetLease(fleet) {
			return fmt.Errorf("gpufleet: fleet %s: %w here: %w", fleet, ErrNoIdle,
				&LeaseHeldError{Name: l.Name, Holder: l.Holder, Expires: l.Expires})
		}
	}
	return fmt.Errorf("gpufleet: fleet %s: %w (no replica holds it yet)", fleet, ErrNoIdle)
}
