package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// An intent is what a public method recorded for the loop to carry out.
type intentKind int

const (
	intentApply intentKind = iota
	intentDelete
	intentRelease
	intentBusy
	intentIdle
)

type intent struct {
	seq    int64  // the stored intent's Seq (replicas), 0 otherwise
	fleet  string // with seq
	kind   intentKind
	spec   Spec   // apply
	name   string // fleet (apply, delete) or instance id (release, busy, idle)
	policy ReleasePolicy
	token  string // busy: the token of Acquire's hand-out (Instance.HandOut, Intent.Acquire); idle: GiveBack's (the hand-out given back)
}

// intentQueue holds intents in call order until the loop takes them. Lock
// order: Manager.mu before intentQueue.mu.
type intentQueue struct {
	mu  sync.Mutex
	ops []intent
}

func (q *intentQueue) push(i intent) {
	q.mu.Lock()
	q.ops = append(q.ops, i)
	q.mu.Unlock()
}

func (q *intentQueue) take() []intent {
	q.mu.Lock()
	defer q.mu.Unlock()
	ops := q.ops
	q.ops = nil
	return ops
}

// requeue puts ops back in front of the intents pushed since take.
func (q *intentQueue) requeue(ops []intent) {
	if len(ops) == 0 {
		return
	}
	q.mu.Lock()
	q.ops = append(slices.Clip(ops), q.ops...)
	q.mu.Unlock()
}

// pendingSpecs returns the specs applied and not yet taken, latest per fleet.
func (q *intentQueue) pendingSpecs() []Spec {
	q.mu.Lock()
	defer q.mu.Unlock()
	by := map[string]Spec{}
	for _, op := range q.ops {
		if op.kind == intentApply {
			by[op.spec.Name] = op.spec
		}
	}
	out := make([]Spec, 0, len(by))
	for _, s := range by {
		out = append(out, s)
	}
	return out
}

// fleetState reports whether a queued intent creates or deletes fleet name
// (the last one wins). q.mu held.
func (q *intentQueue) fleetState(name string) (applied, deleted bool) {
	for _, op := range q.ops {
		if op.name != name && op.spec.Name != name {
			continue
		}
		switch op.kind {
		case intentApply:
			applied, deleted = true, false
		case intentDelete:
			deleted = true
		}
	}
	return applied, deleted
}

// markState is what the intents recorded for an instance and not yet
// carried out make of it, taken in their order.
type markState int

const (
	markNone     markState = iota // none marks or releases it
	markBusy                      // the last mark is busy (MarkBusy, Acquire)
	markIdle                      // the last mark is idle (MarkIdle)
	markReleased                  // released (a later mark does not undo it)
)

// foldMarks folds ops (in call order, stored ones by Seq) into each
// instance's markState and current hand-out (handOuts: the Acquire token
// the node is under after them, "" for none; only instances the ops
// mark), and reports whether one deletes fleet. record gives an
// instance's hand-out and whether a job holds it as its record has them
// (InstanceRecord.HandOut, heldByJob; nil: none, not held): a GiveBack's
// idle mark (one with a token) counts only while its token is the
// instance's hand-out as folded so far; an Acquire's busy mark starts its
// hand-out; a MarkBusy (a busy mark with no token) of an instance held as
// folded so far keeps its hand-out (the job's own mark: another job gets
// the node only after a give-back or MarkIdle), of one not held starts a
// job with none; an idle mark ends it.
func foldMarks(ops []intent, fleet string, record func(id string) (handOut string, held bool)) (marks map[string]markState, handOuts map[string]string, deleted bool) {
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b intent) int { return cmp.Compare(a.seq, b.seq) }) // unstored ones (seq 0) keep their order
	marks, handOuts = map[string]markState{}, map[string]string{}
	for _, op := range ops {
		switch op.kind {
		case intentDelete:
			deleted = deleted || op.name == fleet
		case intentRelease:
			marks[op.name] = markReleased
		case intentBusy, intentIdle:
			if marks[op.name] == markReleased {
				continue
			}
			cur, ok := handOuts[op.name]
			held := marks[op.name] == markBusy
			if !ok && record != nil {
				cur, held = record(op.name)
			}
			if op.kind == intentIdle && op.token != "" && op.token != cur {
				continue // a GiveBack of a hand-out that ended: changes nothing
			}
			marks[op.name] = markIdle
			handOuts[op.name] = ""
			if op.kind == intentBusy {
				marks[op.name] = markBusy
				handOuts[op.name] = op.token
				if op.token == "" && held {
					handOuts[op.name] = cur // the job's own MarkBusy: its hand-out goes on
				}
			}
		}
	}
	return marks, handOuts, deleted
}

// wake tells the loop that something is waiting for it.
func (m *Manager) wake() {
	select {
	case m.tasks.wake <- struct{}{}:
	default:
	}
}

// Apply records a fleet's desired state; the loop acts on it at its next
// step (Run wakes at once). It reads the offer catalog (cached) to refuse
// requirements no offer could ever meet. Changed requirements or placement apply to
// instances created from then on; existing members stay (release them to
// replace them). A smaller Nodes releases members that are not busy (nor
// handed out by Acquire, their busy mark not carried out yet; with
// replicas, the holder reads the fleet's intents first, so that a busy
// mark recorded through another replica is carried out before): stopped ones and creates under way first, then the ones dearest to keep
// for the next hour beyond what they have paid (a dearer plan before a
// cheaper one; a node inside a prepaid minimum is kept over one billing per
// minute), then the ones with the least paid time left, as the release
// policy allows. A larger Nodes keeps the fleet's idle members until as
// many members are ready as it asks for, and their idle clock restarts
// then (see Spec.IdleTimeout). Applying again also resumes a stalled fleet and gives back
// a fleet's private key after a restart. Returns an error answering
// ErrInvalidSpec for a spec that can never be met (see Spec; a provider
// name that is not configured; a GPU model, vendor, region or instance type
// no catalog knows, named with the nearest known ones; MinNodes over
// Nodes), ErrVPCUnsupported for cluster placement no configured provider
// supports, an error for a fleet being deleted, or ErrClosed. With
// replicas, ErrNotRecorded or ErrMaybeRecorded when its intent cannot be
// stored (see there; an Apply whose write answered an error but was stored
// all the same answers nil).
func (m *Manager) Apply(ctx context.Context, spec Spec) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := spec.validate(); err != nil {
		return invalidSpec(err)
	}
	if err := ValidateLabelFits(m.owner, spec.Name); err != nil {
		return invalidSpec(err)
	}
	for _, name := range spec.Requirements.Providers {
		if !containsFold(m.order, name) {
			return invalidSpec(fmt.Errorf("gpufleet: fleet %s: provider %q is not configured (have %v)", spec.Name, name, m.order))
		}
	}
	cctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
	err := m.checkKnown(cctx, spec)
	cancel()
	if err != nil {
		return invalidSpec(err)
	}
	if spec.Placement == "" {
		spec.Placement = PlacementAny
	}
	if err := m.placeable(spec); err != nil {
		return err
	}
	if m.rep != nil {
		if err := m.storedDeleting(ctx, spec.Name); err != nil {
			return err
		}
		return m.putIntent(ctx, Intent{Fleet: spec.Name, Kind: IntentApply, Spec: cloneSpec(spec)},
			intent{kind: intentApply, spec: cloneSpec(spec), name: spec.Name})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() { // Close carries out what was queued before it
		return ErrClosed
	}
	m.intents.mu.Lock()
	defer m.intents.mu.Unlock()
	_, queuedDelete := m.intents.fleetState(spec.Name)
	if f, ok := m.fleets[spec.Name]; (ok && f.Deleting) || queuedDelete {
		return beingDeleted(spec.Name)
	}
	m.intents.ops = append(m.intents.ops, intent{kind: intentApply, spec: cloneSpec(spec), name: spec.Name})
	m.wake()
	return nil
}

// placeable refuses a cluster fleet that no configured provider it may
// use can put in a VPC.
func (m *Manager) placeable(spec Spec) error {
	if spec.Placement != PlacementCluster {
		return nil
	}
	var usable []string
	for _, name := range m.order {
		if len(spec.Requirements.Providers) > 0 && !containsFold(spec.Requirements.Providers, name) {
			continue
		}
		if _, ok := m.providers[name].(VPCProvider); ok {
			return nil
		}
		usable = append(usable, name)
	}
	return classed(ErrVPCUnsupported, "fleet %s: cluster placement needs a VPC, and none of %v offers one", spec.Name, usable)
}

// Delete records that a fleet is to be deleted: every instance is released
// (by the release policy, or as opts say: WithReleasePolicy(ReleaseNow)
// releases at once, forcing Hot Aisle releases inside their minimum
// reservation, whose unrefunded part each ReleaseForced event states in
// USD) and, once all are confirmed gone, its VPC. The fleet disappears after
// that (EventFleetDeleted). It returns at once: ErrNotFound for an unknown
// fleet, ErrClosed after Close. With replicas, ErrNotRecorded or
// ErrMaybeRecorded when its intent cannot be stored (see there), and
// ErrNotRecorded (wrapping the store's error) when the shared store cannot
// be read to find the fleet: a read that fails, or that ctx or
// Policy.CallTimeout cuts, never answers ErrNotFound (call again).
func (m *Manager) Delete(ctx context.Context, name string, opts ...ReleaseOption) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	o, err := releaseOpts(opts)
	if err != nil {
		return err
	}
	if m.rep != nil {
		if ok, err := m.storedFleet(ctx, name, IntentDelete); err != nil {
			return err
		} else if !ok {
			return classed(ErrNotFound, "fleet %s", name)
		}
		return m.putIntent(ctx, Intent{Fleet: name, Kind: IntentDelete, Policy: o.policy},
			intent{kind: intentDelete, name: name, policy: o.policy})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return ErrClosed
	}
	m.intents.mu.Lock()
	defer m.intents.mu.Unlock()
	applied, deleted := m.intents.fleetState(name)
	if _, ok := m.fleets[name]; !ok && (!applied || deleted) {
		return classed(ErrNotFound, "fleet %s", name)
	}
	m.intents.ops = append(m.intents.ops, intent{kind: intentDelete, name: name, policy: o.policy})
	m.wake()
	return nil
}

// ReleaseOption tunes one Release or Delete call.
type ReleaseOption func(*releaseOptions)

type releaseOptions struct{ policy ReleasePolicy }

// WithReleasePolicy overrides the fleet's release policy for this release
// (ReleaseNow forces a release inside the reservation window).
func WithReleasePolicy(p ReleasePolicy) ReleaseOption {
	return func(o *releaseOptions) { o.policy = p }
}

func releaseOpts(opts []ReleaseOption) (releaseOptions, error) {
	var o releaseOptions
	for _, opt := range opts {
		opt(&o)
	}
	switch o.policy {
	case "", ReleaseAtReservationEnd, ReleaseNow, ReleaseCompat:
		return o, nil
	}
	return o, fmt.Errorf("gpufleet: unknown release policy %q", o.policy)
}

// Release records that one instance (by provider id or request id; a
// provider id rented again names its current rental) is to be released, by
// its fleet's release policy unless overridden. It returns the
// earliest time the release will be attempted: now, or the end of the
// reservation window when the policy waits for it. The instance stays
// tracked (terminating) until the provider confirms it gone. Released
// under a job (busy, or handed out by Acquire), it does not give way early
// to another fleet refused its stock while the job may run on
// (Termination.Busy): give it back with GiveBack (or MarkIdle) when the
// job ends, which its release takes while it waits. A fleet that
// still wants the node replaces it; a node whose release the Manager had
// already decided (idle, scale-down) keeps that release's time, and is no
// longer taken back when its fleet grows. Errors: ErrNotFound for an unknown,
// empty or terminated id; ErrClosed after Close. With replicas,
// ErrNotRecorded or ErrMaybeRecorded when its intent cannot be stored (see
// there), and ErrNotRecorded (wrapping the store's error) when the shared
// store cannot be read to find an instance this replica has no record of,
// or its fleet's release policy: a failed read never answers ErrNotFound.
func (m *Manager) Release(ctx context.Context, instanceID string, opts ...ReleaseOption) (time.Time, error) {
	if m.closed.Load() {
		return time.Time{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	o, err := releaseOpts(opts)
	if err != nil {
		return time.Time{}, err
	}
	if m.rep != nil && !m.foundLocally(instanceID) {
		rctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
		rec, err := m.storedInstance(rctx, instanceID, IntentRelease)
		var fleetPolicy ReleasePolicy
		if err == nil {
			fleetPolicy, err = m.storedPolicy(rctx, rec.Instance.Fleet)
		}
		cancel()
		if err != nil {
			return time.Time{}, err
		}
		m.mu.Lock()
		at := m.releaseAt(&rec, fleetPolicy, o.policy, m.clock.Now())
		m.mu.Unlock()
		return at, m.putIntent(ctx, Intent{Fleet: rec.Instance.Fleet, Kind: IntentRelease, InstanceID: rec.Instance.RequestID, Policy: o.policy},
			intent{kind: intentRelease, name: rec.Instance.RequestID, policy: o.policy})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return time.Time{}, ErrClosed
	}
	r := m.find(instanceID)
	if r == nil || r.Instance.Status == StatusTerminated {
		return time.Time{}, classed(ErrNotFound, "instance %q (gone or unknown)", instanceID)
	}
	at := m.releaseAt(r, m.policyFor(m.fleets[r.Instance.Fleet]), o.policy, m.clock.Now())
	if m.rep != nil {
		fleet, reqID := r.Instance.Fleet, r.Instance.RequestID
		m.mu.Unlock()
		err := m.putIntent(ctx, Intent{Fleet: fleet, Kind: IntentRelease, InstanceID: reqID, Policy: o.policy},
			intent{kind: intentRelease, name: reqID, policy: o.policy})
		m.mu.Lock()
		return at, err
	}
	m.intents.push(intent{kind: intentRelease, name: r.Instance.RequestID, policy: o.policy})
	m.wake()
	return at, nil
}

// releaseAt is when a release of r asked now will first be attempted: when
// a release is already decided, its time (unless the caller now asks for
// ReleaseNow); by the policy asked for, else the fleet's, the end of the
// reservation window or now. m.mu held.
func (m *Manager) releaseAt(r *InstanceRecord, fleetPolicy, asked ReleasePolicy, now time.Time) time.Time {
	policy := asked
	if policy == "" {
		policy = fleetPolicy
	}
	switch {
	case r.Termination != nil && !(asked == ReleaseNow && !r.Termination.NotBefore.IsZero()):
		return maxTime(now, r.Termination.NotBefore).In(now.Location())
	case policy == ReleaseAtReservationEnd:
		return maxTime(now, m.reservedUntil(r, now)).In(now.Location()) // a stored record's times come back in another zone
	}
	return now
}

// storedPolicy is the release policy of a fleet as the shared store has it
// (Policy.Release when the fleet is not found there), for Release. A failed
// read is not an absent record (its default policy would make Release
// answer a wrong time): it answers an error answering ErrNotRecorded and
// wrapping the read's error. Replica mode.
func (m *Manager) storedPolicy(ctx context.Context, name string) (ReleasePolicy, error) {
	f, err := m.storedFleetRecord(ctx, name)
	switch {
	case err == nil:
		return m.policyFor(&f), nil
	case errors.Is(err, ErrNotFound):
		return m.pol.Release, nil
	}
	return "", fmt.Errorf("gpufleet: fleet %s: %s %w: reading its record: %w", name, IntentRelease, unprefixed(ErrNotRecorded), err)
}

// MarkBusy records that a ready instance is busy: it is not released for
// idleness. With replicas, a mark recorded through a replica that does not
// hold the fleet is carried out when the holder next reads the fleet's
// intents; the holder reads them before it releases a node for idleness or
// a scale-down, so that a mark recorded before the release fell due is
// carried out first. A mark stored while that read is under way (its
// latency) may find the release decided: one that still waits for its
// window is taken back (EventReleaseCancelled) and the node runs the job;
// otherwise the holder says so with EventMarkDropped. ErrNotFound for an unknown id; an error for an instance that is
// not ready (one being released included: its Release, or its fleet's
// Delete, recorded whether carried out yet or not; with replicas, recorded
// through any replica: the fleet's stored intents are read first, and a
// failed read answers ErrNotRecorded; MarkIdle of a node in release
// differs, see there); ErrClosed after Close. With
// replicas, ErrNotRecorded or ErrMaybeRecorded when the mark's intent
// cannot be stored (see there), and ErrNotRecorded (wrapping the store's
// error) when the shared store cannot be read to find an instance this
// replica has no record of: a failed read never answers ErrNotFound.
//
// MarkBusy carries no hand-out. Of a node busy under a hand-out by Acquire
// (by its record and the marks recorded and not yet carried out, as
// GiveBack counts them), it is the job's own mark (a heartbeat, or its
// orchestrator re-asserting its placements after a restart: another job
// gets the node only after a give-back or MarkIdle, which end the
// hand-out) and keeps the hand-out: the job's GiveBack still frees the
// node; BusySince stays. Of an idle node, it starts a job with no hand-out:
// a GiveBack of an earlier hand-out answers ErrHandedOutAgain after it.
func (m *Manager) MarkBusy(instanceID string) error { return m.mark(instanceID, intentBusy) }

// MarkIdle records that a busy instance is idle; its idle clock starts
// when the loop takes the mark — with replicas, as of when the mark was
// recorded (Intent.At; not before the node's last mark, not after the
// holder carries it out), through whichever replica: a job that ended
// inside a minimum reservation counts as ended there even when the holder
// reads the mark at its next lease sync or takes the fleet over later
// (the job's BusyPeriod for the re-buy hold likewise; MarkBusy's start of
// the job too). On an instance already idle it changes
// nothing: an orchestrator that repeats its idle marks does not keep a node
// (and its bill) running past its release. A node that was busy when it
// was powered off out of band and started again (Policy.OnStoppedRestart,
// EventInstanceStopped) is idle, its job ended with the stop, but stays
// its holder's until MarkIdle gives it back (InstanceRecord.JobStopped):
// Acquire does not hand it out before. Errors as MarkBusy, but for a node
// in release: as GiveBack, MarkIdle of a node released under its job
// answers nil while its release waits (not under way at the cloud), and
// tells the Manager that the job ended (Termination.Busy), so that the
// release may give way to a fleet refused its stock; the release stands.
// ErrReleaseUnderWay once the release is under way at the cloud.
//
// MarkIdle carries no hand-out: it frees the node whoever holds it now. A
// MarkIdle of a node Acquire handed out that is repeated late (a retry
// whose first call succeeded unseen, a queue that delivered it twice) and
// arrives after the node was handed out again frees it under the next job:
// give back what Acquire hands out with GiveBack, which checks the
// hand-out, and keep MarkIdle for nodes placed otherwise (MarkBusy). A
// MarkIdle ends the node's current hand-out (a GiveBack of it then changes
// nothing); so does a MarkBusy of the node once idle, not one of the node
// still busy under it (see MarkBusy).
func (m *Manager) MarkIdle(instanceID string) error { return m.mark(instanceID, intentIdle) }

func (m *Manager) mark(instanceID string, kind intentKind) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if m.rep != nil {
		return m.markStored(instanceID, kind)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return ErrClosed
	}
	r := m.find(instanceID)
	if r == nil {
		return classed(ErrNotFound, "instance %s", instanceID)
	}
	if kind == intentIdle && (r.Termination != nil || m.releaseQueued(r)) && r.Instance.Status != StatusTerminated {
		// The job on a node in release ended: taken while the release waits.
		if err := m.releasedMarkable(r, instanceID); err != nil {
			return err
		}
		m.intents.push(intent{kind: kind, name: r.Instance.RequestID})
		m.wake()
		return nil
	}
	if st := r.Instance.Status; st != StatusIdle && st != StatusBusy && !(kind == intentIdle && r.JobStopped && st == StatusBooting) {
		return fmt.Errorf("gpufleet: instance %s is %s, not ready", instanceID, st)
	}
	if kind == intentBusy && m.releaseQueued(r) {
		return fmt.Errorf("gpufleet: instance %s is %s, not ready", instanceID, StatusTerminating)
	}
	m.intents.push(intent{kind: kind, name: r.Instance.RequestID})
	m.wake()
	return nil
}

// releaseQueued reports whether a queued intent releases r or deletes its
// fleet: r is as good as terminating (the loop will move it there), and a
// mark of it is refused as it is once that is carried out. m.mu held.
func (m *Manager) releaseQueued(r *InstanceRecord) bool {
	m.intents.mu.Lock()
	defer m.intents.mu.Unlock()
	_, deleted := m.intents.fleetState(r.Instance.Fleet)
	return deleted || slices.ContainsFunc(m.intents.ops, func(op intent) bool {
		return op.kind == intentRelease && op.name == r.Instance.RequestID
	})
}

// applyIntents carries out the recorded intents in call order (replica
// mode: only those never stored; stored ones are carried out as the store
// gives them, in Seq order). Loop only; m.mu held.
func (m *Manager) applyIntents(now time.Time) {
	ops := m.intents.take()
	if m.rep != nil {
		ops = m.keepStored(ops)
	}
	for _, op := range ops {
		switch op.kind {
		case intentApply:
			m.applySpec(op.spec, now)
		case intentDelete:
			m.deleteFleet(op.name, op.policy, now)
		case intentRelease:
			m.releaseInstance(op.name, op.policy, now)
		case intentBusy, intentIdle:
			m.applyMark(op.name, op.kind == intentBusy, op.token, now)
		}
	}
}

func (m *Manager) applySpec(spec Spec, now time.Time) {
	f, ok := m.fleets[spec.Name]
	if ok && f.Deleting {
		m.event(Event{Type: EventFleetApplied, Fleet: spec.Name, Err: "the fleet is being deleted", Message: "ignored"})
		return
	}
	if !ok {
		f = &FleetRecord{Created: now}
		m.fleets[spec.Name] = f
	}
	old := f.Spec.Nodes
	f.Spec = spec
	if ok {
		m.noteGrowth(f, old, now)
	}
	f.KeyRequired = !spec.PrivateKey.IsZero()
	delete(m.keyMissing, spec.Name)
	delete(m.keyMissingSaid, spec.Name)
	f.Stalled = false
	delete(m.deadlineMisses, spec.Name)
	delete(m.keyedAgents, spec.Name)
	delete(m.fleetRetry, spec.Name)
	m.dirtyF[spec.Name] = true
	m.event(Event{Type: EventFleetApplied, Fleet: spec.Name, Message: fmt.Sprintf("nodes=%d placement=%s", spec.Nodes, spec.Placement)})
}

func (m *Manager) deleteFleet(name string, policy ReleasePolicy, now time.Time) {
	f, ok := m.fleets[name]
	if !ok {
		return
	}
	f.Deleting = true
	m.dirtyF[name] = true
	if policy == "" {
		policy = m.policyFor(f)
	}
	for _, r := range m.insts {
		if r.Instance.Fleet != name || r.Instance.Status == StatusTerminated {
			continue
		}
		if r.Termination != nil && policy == ReleaseNow && r.Termination.Attempts == 0 && !r.Termination.NotBefore.IsZero() {
			r.Termination = nil // re-decide: the caller wants it released at once
		}
		if r.Termination == nil {
			m.requestRelease(r, "fleet deleted", policy, now, true)
		}
	}
}

func (m *Manager) releaseInstance(reqID string, override ReleasePolicy, now time.Time) {
	r := m.insts[reqID]
	if r == nil || r.Instance.Status == StatusTerminated {
		return
	}
	policy := override
	if policy == "" {
		policy = m.policyFor(m.fleets[r.Instance.Fleet])
	}
	if r.Termination != nil && override == ReleaseNow && r.Termination.Attempts == 0 && !r.Termination.NotBefore.IsZero() {
		r.Termination = nil // re-decide: the caller now wants it released at once
	}
	m.requestRelease(r, "released", policy, now, true)
}

// applyMark carries out a busy or idle mark of reqID on a Manager alone:
// token is an Acquire's (busy: its hand-out begins) or a GiveBack's (idle:
// carried out only while that hand-out is the node's current one). m.mu
// held.
func (m *Manager) applyMark(reqID string, busy bool, token string, now time.Time) {
	r := m.insts[reqID]
	if r != nil && r.Termination != nil {
		delete(m.acquired, reqID)
		if !busy {
			m.givenBackInRelease(r, token, now) // the job on a node in release ended
		}
		return
	}
	if !busy && token != "" && (r == nil || r.HandOut != token) {
		return // the hand-out given back had ended (GiveBack checked it when called)
	}
	delete(m.acquired, reqID)
	m.markBusy(reqID, busy, token, now)
	if busy && token != "" && r != nil && r.Termination == nil && r.Busy {
		r.HandOut = token
		m.dirtyI[reqID] = true
	}
}

// markBusy carries out a busy or idle mark of reqID, token the mark's
// hand-out token ("" for MarkBusy, MarkIdle, a void). It ends the node's
// hand-out (HandOut: the caller sets it again for an Acquire's mark),
// except for a MarkBusy of a node a job holds (heldByJob): that is the
// job's own mark (another job gets the node only after a give-back or
// MarkIdle, which end the hand-out), and its GiveBack must still free the
// node. m.mu held.
func (m *Manager) markBusy(reqID string, busy bool, token string, now time.Time) {
	r := m.insts[reqID]
	if r == nil || r.Termination != nil {
		return
	}
	if r.HandOut != "" && !(busy && token == "" && heldByJob(r)) {
		r.HandOut = ""
		m.dirtyI[reqID] = true
	}
	if r.JobStopped && (!busy || r.Instance.Status == StatusIdle) {
		// Given back by its holder (MarkIdle, taken while it boots again
		// too: tester AR), or taken again (MarkBusy).
		r.JobStopped = false
		m.dirtyI[reqID] = true
	}
	if r.Instance.Status != StatusIdle && r.Instance.Status != StatusBusy {
		return
	}
	if !busy && !r.Busy && r.Instance.Status == StatusIdle {
		return // idle already: its idle clock runs on (a repeated MarkIdle must not keep it for ever)
	}
	if busy && !r.Busy {
		r.BusySince = now // a repeated busy mark does not restart the job
	}
	r.Busy = busy
	r.AcquiredBy = "" // Acquire's own mark sets it after this (applyStored)
	m.noteBusy(r, busy, now)
	m.dirtyI[reqID] = true
	if busy {
		m.setStatus(r, StatusBusy, "marked busy", now)
		m.event(Event{Type: EventInstanceBusy, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID})
		return
	}
	r.IdleSince = now
	m.setStatus(r, StatusIdle, "marked idle", now)
	m.event(Event{Type: EventInstanceIdle, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID})
}

// storedFleet reports whether a fleet is in the shared store or applied
// there by a pending intent (replica mode), for a call recording an intent
// of kind. A read that fails (the store's error, its context's end) is not
// an absent record: it answers an error answering ErrNotRecorded and
// wrapping the read's error, and nothing is recorded.
func (m *Manager) storedFleet(ctx context.Context, name string, kind IntentKind) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
	defer cancel()
	_, err := m.storedFleetRecord(ctx, name)
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, ErrNotFound):
		return false, fmt.Errorf("gpufleet: fleet %s: %s %w: reading its record: %w", name, kind, unprefixed(ErrNotRecorded), err)
	}
	ins, err := m.rep.ls.Intents(ctx, name)
	if err != nil {
		return false, fmt.Errorf("gpufleet: fleet %s: %s %w: reading its intents: %w", name, kind, unprefixed(ErrNotRecorded), err)
	}
	return slices.ContainsFunc(ins, func(in Intent) bool { return in.Kind == IntentApply }), nil
}

// foundLocally reports whether this replica has a record of instanceID.
func (m *Manager) foundLocally(instanceID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.find(instanceID) != nil
}

// storedInstance finds an instance record in the shared store by provider
// id or request id, for a call recording an intent of kind; ErrNotFound
// when none, or when it is terminated. A failed read is not an absent
// record: it answers an error answering ErrNotRecorded and wrapping the
// read's error. One read by id when the store is a RecordFinder, else
// every record.
func (m *Manager) storedInstance(ctx context.Context, id string, kind IntentKind) (InstanceRecord, error) {
	rec, found, err := m.findStoredInstance(ctx, id)
	if err != nil {
		return InstanceRecord{}, fmt.Errorf("gpufleet: instance %s: %s %w: reading its record: %w", id, kind, unprefixed(ErrNotRecorded), err)
	}
	if !found || rec.Instance.Status == StatusTerminated {
		return InstanceRecord{}, classed(ErrNotFound, "instance %q (gone or unknown)", id)
	}
	return rec, nil
}

// markStored records a busy or idle mark in the shared store (replica mode).
func (m *Manager) markStored(instanceID string, kind intentKind) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.pol.CallTimeout)
	defer cancel()
	m.mu.Lock()
	r := m.find(instanceID)
	var rec InstanceRecord
	var after int64              // the intents the record reflects: read with it, or one carried out in between is missed
	queued, held := false, false // a release of it queued, not carried out yet; this replica holds its fleet
	if r != nil {
		rec = cloneInstance(*r)
		if queued = m.releaseQueued(r) && rec.Termination == nil; queued && kind == intentBusy { // as the loop will have it
			rec.Instance.Status = StatusTerminating
		}
		if _, held = m.rep.held[rec.Instance.Fleet]; held {
			after = m.rep.applied[rec.Instance.Fleet]
		}
	}
	m.mu.Unlock()
	k := IntentBusy
	if kind == intentIdle {
		k = IntentIdle
	}
	if r == nil {
		var err error
		if rec, err = m.storedInstance(ctx, instanceID, k); err != nil {
			return err
		}
	}
	switch st := rec.Instance.Status; {
	case kind == intentIdle && rec.Termination != nil && st == StatusTerminating:
		// The job on a node in release ended: taken while the release waits.
		if !m.storedWaits(&rec, held) {
			return releaseUnderWay(instanceID)
		}
	case st != StatusIdle && st != StatusBusy && !(kind == intentIdle && rec.JobStopped && st == StatusBooting):
		return fmt.Errorf("gpufleet: instance %s is %s, not ready", instanceID, st)
	case kind == intentIdle:
		// A release recorded, not carried out yet, takes the mark when it will wait.
		policies, err := m.recordedReleases(ctx, rec, after, k)
		if err != nil {
			return err
		}
		if queued {
			_, waits := m.queuedReleaseWaitsLocked(instanceID)
			if !waits {
				return releaseUnderWay(instanceID)
			}
		}
		if err := m.storedReleaseTakes(ctx, &rec, policies, held); err != nil {
			return err
		}
	default:
		if err := m.releaseStored(ctx, rec, after, k); err != nil {
			return err
		}
	}
	return m.putIntent(ctx, Intent{Fleet: rec.Instance.Fleet, Kind: k, InstanceID: rec.Instance.RequestID},
		intent{kind: kind, name: rec.Instance.RequestID})
}

// releaseStored refuses a mark (kind) of rec, as markStored found it,
// when the shared store has a Release of it or a Delete of its fleet
// recorded (through any replica) and not yet acknowledged: the node is as
// good as terminating. after: rec is this replica's record, which has the
// intents it carried out up to that Seq (read with it, under the same lock:
// a Delete carried out in between would otherwise be in neither); only
// those after are read then. A failed read answers ErrNotRecorded (nothing
// is recorded). Replica mode.
func (m *Manager) releaseStored(ctx context.Context, rec InstanceRecord, after int64, kind IntentKind) error {
	policies, err := m.recordedReleases(ctx, rec, after, kind)
	if err != nil {
		return err
	}
	if len(policies) > 0 {
		return fmt.Errorf("gpufleet: instance %s is %s, not ready (its release is recorded)", rec.Instance.RequestID, StatusTerminating)
	}
	return nil
}

// recordedReleases reads the Release of rec's node and Delete of its fleet
// recorded in the shared store (through any replica) and not yet
// acknowledged, after the intent Seq after (see releaseStored), and
// returns their policies in Seq order (releasePolicies). A failed read
// answers ErrNotRecorded. Replica mode.
func (m *Manager) recordedReleases(ctx context.Context, rec InstanceRecord, after int64, kind IntentKind) ([]ReleasePolicy, error) {
	fleet, id := rec.Instance.Fleet, rec.Instance.RequestID
	var ins []Intent
	var err error
	if rr, ok := m.rep.ls.(ReleaseIntentReader); ok {
		ins, err = rr.ReleaseIntents(ctx, fleet, id, after)
	} else {
		ins, err = m.intentsAfter(ctx, fleet, after)
	}
	if err != nil {
		return nil, fmt.Errorf("gpufleet: instance %s: %s %w: reading its fleet's intents: %w", id, kind, unprefixed(ErrNotRecorded), err)
	}
	return releasePolicies(rec, ins, after), nil
}

// queuedReleaseWaitsLocked is queuedReleaseWaits for the record of id,
// taking m.mu.
func (m *Manager) queuedReleaseWaitsLocked(id string) (queued, waits bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.find(id); r != nil {
		return m.queuedReleaseWaits(r)
	}
	return false, false
}
