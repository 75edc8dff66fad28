package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrHandedOutAgain is returned by GiveBack when the node is no longer
// under the hand-out given back: another Acquire handed it out since, or,
// after it was given back (GiveBack, MarkIdle), a MarkBusy marked it busy
// for a job placed otherwise. Nothing was changed: the node stays with its
// current job.
var ErrHandedOutAgain = errors.New("gpufleet: node handed out again since")

// GiveBack gives back a node that Acquire handed out, once its job ended:
// inst is the Instance Acquire returned (its HandOut token names the
// hand-out). It records the node idle as MarkIdle does (its idle clock
// starts; Acquire may hand it out again at once) only while inst's
// hand-out is still the node's current one, counting the marks recorded
// and not yet carried out as Acquire does. Once the node was handed out
// again by another Acquire, or given back and then marked busy with
// MarkBusy, it answers an error answering ErrHandedOutAgain and changes
// nothing: a give-back
// repeated late (a retry whose first call succeeded unseen, a queue that
// delivered it twice) does not free the node under the next job, so that
// Acquire does not hand it out a third time and the idle rules do not
// release it while that job runs. Repeating GiveBack for a hand-out already
// given back answers nil and changes nothing while the node is idle (its
// idle clock runs on), ErrHandedOutAgain once it is taken again.
//
// MarkBusy and MarkIdle carry no hand-out. A MarkIdle recorded after the
// Acquire ends its hand-out (a GiveBack after it finds the node idle and
// answers nil), and so does a MarkBusy of the node once idle (a job placed
// otherwise: a GiveBack after it answers ErrHandedOutAgain). A MarkBusy of
// the node while it is still busy under the hand-out — by its record and
// the marks recorded and not yet carried out, as GiveBack counts them — is
// the job's own (a heartbeat, or its orchestrator re-asserting its
// placements after a restart: another job gets the node only after a
// give-back or MarkIdle) and keeps the hand-out: the job's GiveBack still
// frees the node. Use GiveBack for nodes Acquire hands out, MarkIdle for
// nodes placed otherwise. A node
// whose job a stop out of band ended (InstanceRecord.JobStopped) stays
// under its hand-out, and GiveBack gives it back as MarkIdle does.
//
// A node released under its job (its Release, or its fleet's Delete,
// recorded while the job ran) takes the job's give-back as long as its
// release waits — for its reservation window (the end of its minimum,
// paid anyway; ReleaseAtReservationEnd), not yet under way at the cloud —
// with the same check of the hand-out (kept with the release,
// Termination.HandOut): GiveBack answers nil and tells the Manager that
// the job ended (Termination.Busy ends). The release stands (the node is
// not handed out again, nor taken back); from then on it gives way to
// another fleet of the Manager refused the stock, released at once with
// force like any release that waits for its minimum's end (see
// Policy.RebuyHoldOff), where while the job ran it waited for its minimum's
// end. A release recorded and not carried out yet counts as it will be
// decided (by its policy, WithReleasePolicy, else its fleet's).
//
// Errors: an error for an inst with no HandOut (not one Acquire returned:
// use MarkIdle); ErrNotFound for an unknown or terminated rental
// (inst.RequestID, else inst.ID): a node gone; ErrReleaseUnderWay for a
// node whose release is under way at the cloud (its delete called or due
// now: ReleaseNow, or its window over), recorded or carried out, which
// the job's end changes nothing for; an error for a node that is not ready
// otherwise (booting); ErrClosed after Close; ErrHandedOutAgain (also for
// a node in release, while the job its release was decided under holds
// it). None of them changes anything.
//
// With replicas, through any replica: the hand-out is checked against the
// node's record and the fleet's stored intents before the idle mark is
// stored, and those recorded before the mark are read again after it (an
// Acquire of the node racing the call); the holder carries the mark out
// only while the node's hand-out is inst's (InstanceRecord.HandOut, stored
// with the node's record: a replica taking the fleet over checks it too),
// and drops it otherwise. When that second read fails, or the holder
// carried the racing marks out before it, GiveBack answers nil for a mark
// the holder drops: it changes nothing either way. ErrNotRecorded or
// ErrMaybeRecorded when the mark cannot be stored (see there; a repeated
// GiveBack is safe), and ErrNotRecorded (wrapping the store's error) when
// the shared store cannot be read: a failed read never answers ErrNotFound
// or ErrHandedOutAgain.
func (m *Manager) GiveBack(inst Instance) error {
	if m.closed.Load() {
		return ErrClosed
	}
	id := inst.RequestID
	if id == "" {
		id = inst.ID
	}
	if inst.HandOut == "" {
		return fmt.Errorf("gpufleet: instance %s: GiveBack needs the Instance that Acquire returned (its HandOut is empty); give back a node placed otherwise with MarkIdle", id)
	}
	if m.rep != nil {
		return m.giveBackStored(id, inst.HandOut)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return ErrClosed
	}
	r := m.find(id)
	if r == nil || r.Instance.Status == StatusTerminated {
		return classed(ErrNotFound, "instance %q (gone or unknown)", id)
	}
	if err := m.releasedMarkable(r, id); err != nil {
		return err
	}
	rid := r.Instance.RequestID
	marks, handOuts, _ := foldMarks(m.pendingOps(r.Instance.Fleet, nil), r.Instance.Fleet, m.recordHandOut)
	cur, busy := holdOf(r)
	if h, ok := handOuts[rid]; ok {
		cur = h
	}
	switch marks[rid] {
	case markBusy:
		busy = true
	case markIdle:
		busy = false
	}
	if cur != inst.HandOut {
		return handOutVerdict(id, cur, busy)
	}
	m.intents.push(intent{kind: intentIdle, name: rid, token: inst.HandOut})
	m.wake()
	return nil
}

// ErrReleaseUnderWay is returned by GiveBack and MarkIdle for a node
// whose release is under way at the cloud: its delete was called (under
// way, refused and retried, or accepted) or is due now. The job's end
// changes nothing then: the node is going, and nothing was recorded. A
// node whose release only waits (for its reservation window: the end of
// its minimum, paid anyway) takes the give-back: see GiveBack.
var ErrReleaseUnderWay = errors.New("gpufleet: release under way")

// releaseUnderWay is the error for a mark of node id whose release is
// under way at the cloud.
func releaseUnderWay(id string) error {
	return classed(ErrReleaseUnderWay, "instance %s is %s, not ready", id, StatusTerminating)
}

// releaseWaitsHere reports whether the decided release of r (Termination
// set, terminating) is not under way at the cloud: no delete call under
// way or accepted, and it still waits (releaseWaits: for its reservation
// window, or for a minimum of unknown end the provider refused it for).
// A give-back of its job is taken then (givenBackInRelease). m.mu held.
func (m *Manager) releaseWaitsHere(r *InstanceRecord) bool {
	return r.Instance.Status == StatusTerminating && !m.busy("delete/"+r.Instance.RequestID) && storedReleaseWaits(r, m.clock.Now())
}

// releasedMarkable refuses an idle mark (GiveBack, MarkIdle) of r, asked
// for by id, that a release of r does not take: r is not ready and no
// release of it is decided or queued (markable), or its release is under
// way at the cloud (ErrReleaseUnderWay) — decided and no longer waiting
// (releaseWaitsHere), or queued and due at once when the loop carries it
// out (queuedReleaseWaits). m.mu held.
func (m *Manager) releasedMarkable(r *InstanceRecord, id string) error {
	switch queued, waits := m.queuedReleaseWaits(r); {
	case r.Termination != nil && r.Instance.Status == StatusTerminating:
		if !m.releaseWaitsHere(r) {
			return releaseUnderWay(id)
		}
	case queued:
		if err := markable(r, id); err != nil {
			return err
		}
		if !waits {
			return releaseUnderWay(id)
		}
	default:
		return markable(r, id)
	}
	return nil
}

// queuedReleaseWaits reports whether a queued intent releases r or deletes
// its fleet (releaseQueued), and whether that release will wait when the
// loop carries it out (recordedReleaseWaits). m.mu held.
func (m *Manager) queuedReleaseWaits(r *InstanceRecord) (queued, waits bool) {
	m.intents.mu.Lock()
	var policies []ReleasePolicy
	for _, op := range m.intents.ops {
		if (op.kind == intentRelease && op.name == r.Instance.RequestID) || (op.kind == intentDelete && op.name == r.Instance.Fleet) {
			policies = append(policies, op.policy)
		}
	}
	m.intents.mu.Unlock()
	if len(policies) == 0 {
		return false, false
	}
	return true, m.recordedReleaseWaits(r, m.policyFor(m.fleets[r.Instance.Fleet]), policies, m.clock.Now())
}

// recordedReleaseWaits reports whether the release of r that intents
// recorded and not carried out yet decide (policies: each one's
// ReleasePolicy, "" for the fleet's fleetPolicy, in their order) will wait
// for its reservation window when carried out now: not when one of them
// asks for ReleaseNow, else as the first decides it (releaseAt; a release
// decided is not decided again). m.mu held.
func (m *Manager) recordedReleaseWaits(r *InstanceRecord, fleetPolicy ReleasePolicy, policies []ReleasePolicy, now time.Time) bool {
	if len(policies) == 0 || slices.Contains(policies, ReleaseNow) {
		return false
	}
	return m.releaseAt(r, fleetPolicy, policies[0], now).After(now)
}

// storedReleaseWaits is releaseWaitsHere by r's record alone (a replica
// that does not hold r's fleet, or reads its record from the store, does
// not know the holder's calls under way).
func storedReleaseWaits(r *InstanceRecord, now time.Time) bool {
	t := r.Termination
	return t != nil && r.Instance.Status == StatusTerminating && releaseWaits(t, now)
}

// storedWaits is releaseWaitsHere for rec, a copy of this replica's own
// record when held (the holder knows its delete calls under way), else
// one read from the store (storedReleaseWaits). Replica mode.
func (m *Manager) storedWaits(rec *InstanceRecord, held bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if held && m.busy("delete/"+rec.Instance.RequestID) {
		return false
	}
	return storedReleaseWaits(rec, m.clock.Now())
}

// releasePolicies lists the ReleasePolicy of each Release of rec's node
// and Delete of its fleet among ins (a fleet's stored intents) with a Seq
// after base, in Seq order ("" for the fleet's own).
func releasePolicies(rec InstanceRecord, ins []Intent, base int64) []ReleasePolicy {
	ins = slices.Clone(ins)
	slices.SortStableFunc(ins, func(a, b Intent) int { return cmp.Compare(a.Seq, b.Seq) })
	var out []ReleasePolicy
	for _, in := range ins {
		if in.Seq > base && (in.Kind == IntentDelete || (in.Kind == IntentRelease && in.InstanceID == rec.Instance.RequestID)) {
			out = append(out, in.Policy)
		}
	}
	return out
}

// storedReleaseTakes refuses an idle mark of rec (ready, its release not
// decided on the record read) when a release of it recorded and not
// carried out yet (policies, see releasePolicies) will not wait when the
// holder carries it out (ErrReleaseUnderWay): the release policy is the
// fleet's, this replica's when it holds the fleet (held), else the
// store's (a failed read answers ErrNotRecorded). Replica mode.
func (m *Manager) storedReleaseTakes(ctx context.Context, rec *InstanceRecord, policies []ReleasePolicy, held bool) error {
	if len(policies) == 0 {
		return nil
	}
	id := rec.Instance.RequestID
	var fleetPolicy ReleasePolicy
	if held {
		m.mu.Lock()
		fleetPolicy = m.policyFor(m.fleets[rec.Instance.Fleet])
		m.mu.Unlock()
	} else if !slices.Contains(policies, ReleaseNow) && policies[0] == "" {
		p, err := m.storedPolicy(ctx, rec.Instance.Fleet)
		if err != nil {
			return fmt.Errorf("gpufleet: instance %s: %s %w: %w", id, IntentIdle, unprefixed(ErrNotRecorded), err)
		}
		fleetPolicy = p
	}
	m.mu.Lock()
	waits := m.recordedReleaseWaits(rec, fleetPolicy, policies, m.clock.Now())
	m.mu.Unlock()
	if !waits {
		return releaseUnderWay(id)
	}
	return nil
}

// holdOf is the hand-out r's node is under by its record ("" for none)
// and whether a job holds it: for a node whose release is decided, the
// hand-out and the job its release was decided under
// (Termination.HandOut, Termination.Busy; JobStopped) until given back;
// else InstanceRecord.HandOut and heldByJob.
func holdOf(r *InstanceRecord) (handOut string, busy bool) {
	if t := r.Termination; t != nil {
		return t.HandOut, t.Busy || r.JobStopped
	}
	return r.HandOut, heldByJob(r)
}

// givenBackInRelease carries out an idle mark of r whose release is
// decided: a GiveBack's (token: the hand-out given back, carried out only
// while it is the one r's release was decided under, Termination.HandOut)
// or a MarkIdle's (token ""). The job that ran on r when its release was
// decided ended at now: Termination.Busy, its HandOut and r's JobStopped
// end, the job's end is logged for the re-buy hold, and r's idle time
// starts (IdleSince). The release stands (r stays terminating); from then
// on it gives way to a fleet refused its stock like any release that
// waits for its minimum's end (waitsForMinimum). A mark that finds the
// job given back already changes nothing. m.mu held.
func (m *Manager) givenBackInRelease(r *InstanceRecord, token string, now time.Time) {
	t := r.Termination
	if token != "" && token != t.HandOut {
		return // a give-back of a hand-out that ended (GiveBack checked it when called)
	}
	if !t.Busy && t.HandOut == "" && !r.JobStopped {
		return // given back already
	}
	t.Busy, t.HandOut, r.JobStopped = false, "", false
	m.noteBusy(r, false, now)
	r.IdleSince = maxTime(r.IdleSince, now)
	m.dirtyI[r.Instance.RequestID] = true
}

// markable refuses an idle mark of r (asked for by id) when r is not
// ready: as MarkIdle, a node whose job a stop ended may be given back while
// it boots again.
func markable(r *InstanceRecord, id string) error {
	if st := r.Instance.Status; st != StatusIdle && st != StatusBusy && !(r.JobStopped && st == StatusBooting) {
		return fmt.Errorf("gpufleet: instance %s is %s, not ready", id, st)
	}
	return nil
}

// heldByJob reports whether r's record has it held by a job: busy, or its
// job ended by a stop out of band until its holder gives it back.
func heldByJob(r *InstanceRecord) bool {
	return r.Busy || r.Instance.Status == StatusBusy || r.JobStopped
}

// handOutVerdict is GiveBack's answer for a node whose current hand-out
// cur (busy: held by a job) is not the one given back: nil when the node
// is idle, under no hand-out (given back already: nothing to do), else
// ErrHandedOutAgain.
func handOutVerdict(id, cur string, busy bool) error {
	if !busy {
		return nil
	}
	if cur == "" {
		return classed(ErrHandedOutAgain, "instance %s (marked busy with MarkBusy since)", id)
	}
	return classed(ErrHandedOutAgain, "instance %s (handed out by another Acquire since)", id)
}

// giveBackStored is GiveBack on a replica: it reads the fleet's stored
// intents, then the node's record (this replica's when it holds the fleet,
// else the store's: a record read after the intents reflects at least
// those acknowledged before, which the read missed), folds the first onto
// the second, records the idle mark with its hand-out's token when that is
// still the node's, and reads the intents recorded before the mark to see
// whether an Acquire, or a MarkBusy of the node once idle, came between
// (handOutAfter).
// Replica mode.
func (m *Manager) giveBackStored(id, token string) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.pol.CallTimeout)
	defer cancel()
	m.mu.Lock()
	var fleet string
	var after int64 // this replica's record reflects the intents up to it (0: the store's record is read)
	if r := m.find(id); r != nil {
		if _, held := m.rep.held[r.Instance.Fleet]; held {
			fleet, after = r.Instance.Fleet, m.rep.applied[r.Instance.Fleet]
		}
	}
	m.mu.Unlock()
	if fleet == "" {
		rec, err := m.storedInstance(ctx, id, IntentIdle)
		if err != nil {
			return err
		}
		fleet = rec.Instance.Fleet
	}
	ins, err := m.intentsAfter(ctx, fleet, after)
	if err != nil {
		return fmt.Errorf("gpufleet: instance %s: %s %w: reading its fleet's intents: %w", id, IntentIdle, unprefixed(ErrNotRecorded), err)
	}
	var rec InstanceRecord
	var base int64 // the Seq up to which rec reflects the fleet's intents (0: not known, all are folded)
	found := false
	voided := map[string]bool{} // Acquires whose busy mark this replica knows void (its void perhaps not stored yet)
	m.mu.Lock()
	if r := m.find(id); r != nil && r.Instance.Fleet == fleet {
		if _, held := m.rep.held[fleet]; held {
			rec, found, base = cloneInstance(*r), true, m.rep.applied[fleet]
			now := m.clock.Now()
			for _, in := range ins {
				if in.Kind == IntentBusy && m.isVoided(fleet, in.Acquire, now) {
					voided[in.Acquire] = true
				}
			}
		}
	}
	m.mu.Unlock()
	if !found && after > 0 { // the lease was lost meanwhile: the store's record is read, with every intent
		if ins, err = m.intentsAfter(ctx, fleet, 0); err != nil {
			return fmt.Errorf("gpufleet: instance %s: %s %w: reading its fleet's intents: %w", id, IntentIdle, unprefixed(ErrNotRecorded), err)
		}
	}
	if !found {
		if rec, err = m.storedInstance(ctx, id, IntentIdle); err != nil {
			return err
		}
	}
	last := base // the last Seq read
	for _, in := range ins {
		last = max(last, in.Seq)
	}
	isVoid := func(in Intent) bool { return in.Kind == IntentBusy && voided[in.Acquire] }
	ins = slices.DeleteFunc(ins, isVoid)
	switch {
	case rec.Instance.Status == StatusTerminated:
		return classed(ErrNotFound, "instance %q (gone or unknown)", id)
	case rec.Termination != nil && rec.Instance.Status == StatusTerminating:
		if !m.storedWaits(&rec, found) {
			return releaseUnderWay(id)
		}
	default:
		if err := markable(&rec, id); err != nil {
			return err
		}
		if err := m.storedReleaseTakes(ctx, &rec, releasePolicies(rec, ins, base), found); err != nil {
			return err
		}
	}
	rid := rec.Instance.RequestID
	cur, busy, _ := handOutAfter(rec, ins, base)
	if cur != token {
		return handOutVerdict(id, cur, busy)
	}
	seq, err := m.recordIntent(ctx, Intent{Fleet: fleet, Kind: IntentIdle, InstanceID: rid, Acquire: token},
		intent{kind: intentIdle, name: rid, token: token})
	if err != nil {
		return err
	}
	between, err := m.intentsAfter(ctx, fleet, last)
	if err != nil {
		return nil // the holder checks the hand-out when it carries the mark out
	}
	if rec.Termination != nil { // as the first read left it
		t := *rec.Termination
		t.HandOut, t.Busy = token, true
		rec.Termination = &t
	} else {
		rec.HandOut, rec.Busy = token, true
	}
	cur, busy, _ = handOutAfter(rec, slices.DeleteFunc(between, func(in Intent) bool { return in.Seq >= seq || isVoid(in) }), last)
	if cur != token {
		return handOutVerdict(id, cur, busy)
	}
	return nil
}

// handOutAfter folds the marks of rec's node among ins (a fleet's stored
// intents) with a Seq after base, in Seq order, onto rec: the hand-out the node is under then (cur, "" for none),
// whether a job holds it (busy), and whether its release or its fleet's
// Delete is recorded. An Acquire's busy mark voided among them is none; a
// MarkBusy (no token) keeps the hand-out of a node busy then and starts a
// job with none on an idle one; a GiveBack's idle mark counts only for the
// current hand-out, as the holder carries them out.
func handOutAfter(rec InstanceRecord, ins []Intent, base int64) (cur string, busy, released bool) {
	id := rec.Instance.RequestID
	cur, busy = holdOf(&rec)
	in := func(x Intent) bool { return x.Seq > base }
	voided := map[string]bool{}
	for _, x := range ins {
		if in(x) && x.Kind == IntentVoid && x.Acquire != "" {
			voided[x.Acquire] = true
		}
	}
	ins = slices.Clone(ins)
	slices.SortStableFunc(ins, func(a, b Intent) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, x := range ins {
		if !in(x) {
			continue
		}
		switch {
		case x.Kind == IntentDelete:
			released = true
		case x.InstanceID != id:
		case x.Kind == IntentRelease:
			released = true
		case x.Kind == IntentBusy && x.Acquire == "":
			if !busy {
				cur = "" // a MarkBusy of an idle node: a job with no hand-out
			}
			busy = true // of a held one: the job's own mark, its hand-out goes on
		case x.Kind == IntentBusy:
			if !voided[x.Acquire] {
				cur, busy = x.Acquire, true
			}
		case x.Kind == IntentIdle && (x.Acquire == "" || x.Acquire == cur):
			cur, busy = "", false
		case x.Kind == IntentVoid && x.Acquire != "" && x.Acquire == cur:
			cur, busy = "", false
		}
	}
	return cur, busy, released
}
