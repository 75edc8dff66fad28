package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// acquireStored is Acquire on the replica holding fleet. The busy mark is
// stored (an IntentBusy) before the node is handed out, so that if this
// replica dies the next holder carries it out rather than hand the node
// out again; when that write fails nothing is handed out. Then the
// fleet's intents recorded before the mark are read: a node that one of
// them, not yet carried out here, releases or marks busy is given up for
// another (its mark voided), and a recorded Delete answers
// ErrNotFound. When that read fails the node is handed out: its mark is
// stored. Last, the lease this replica held when it picked the node must
// still be its own and valid: one lost meanwhile (a write stalled past
// it) may have let the next holder hand the node out, so nothing is handed
// out. Whenever Acquire answers an error after its write, the mark is
// voided (voidAcquire). When this replica's view (its records and the
// intents it queued) has no idle node, the fleet's stored intents are read
// once and counted too: a MarkIdle or a Delete recorded through another
// replica and not yet carried out here.
func (m *Manager) acquireStored(ctx context.Context, fleet string) (Instance, error) {
	ctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
	defer cancel()
	skip := map[string]bool{}
	var stored []Intent // the fleet's stored intents, once read
	read := false
	for {
		m.mu.Lock()
		if !m.holds(fleet, m.clock.Now()) {
			m.mu.Unlock()
			return Instance{}, m.acquireElsewhere(ctx, fleet)
		}
		lease := m.rep.held[fleet] // to be still ours once the mark is written
		r, err := m.pickIdle(fleet, skip, stored)
		var inst Instance
		var seen int64 // the Seq up to which the pick saw the fleet's intents carried out
		if err == nil {
			inst, seen = handedOut(r), m.rep.applied[fleet]
			m.picking[inst.RequestID]++ // until its busy mark is queued (or given up)
		}
		after := m.rep.applied[fleet]
		m.mu.Unlock()
		if errors.Is(err, ErrNoIdle) && !read {
			read = true
			if ins, rerr := m.intentsAfter(ctx, fleet, after); rerr == nil && slices.ContainsFunc(ins, func(in Intent) bool {
				return in.Kind == IntentIdle || in.Kind == IntentDelete
			}) {
				stored = ins
				continue
			}
		}
		if err != nil {
			return Instance{}, err
		}
		id, token := inst.RequestID, NewRequestID()
		inst.HandOut = token
		local := intent{kind: intentBusy, name: id, token: token}
		seq, _, err := m.storeIntent(ctx, Intent{Fleet: fleet, Kind: IntentBusy, InstanceID: id, Acquire: token, Call: token, At: m.clock.Now()})
		if err != nil {
			m.unpick(id)
			m.voidAcquire(ctx, fleet, id, token)
			return Instance{}, fmt.Errorf("gpufleet: fleet %s: acquire %w: %w", fleet, unprefixed(ErrNotRecorded), err)
		}
		m.mu.Lock()
		m.noteRecorded(fleet, seq, local)
		m.mu.Unlock()
		m.unpick(id) // its busy mark is queued: it counts from there
		before, rerr := m.intentsAfter(ctx, fleet, seen)
		if !m.stillHolds(fleet, lease) {
			m.voidAcquire(ctx, fleet, id, token)
			return Instance{}, m.leaseLost(ctx, fleet)
		}
		if rerr != nil {
			return inst, nil
		}
		taken, deleted := takenBetween(before, id, seen, seq)
		switch {
		case deleted:
			return Instance{}, classed(ErrNotFound, "fleet %s (its Delete is recorded)", fleet)
		case taken:
			// Its mark is void too: a no-op while the earlier one stands,
			// it would leave the node busy should that one be voided.
			m.voidAcquire(ctx, fleet, id, token)
			skip[id] = true
			continue
		}
		return inst, nil
	}
}

// stillHolds reports whether lease, held when Acquire picked its node, is
// still this replica's lease of fleet (the same token: nobody else held it
// meanwhile) and valid now by this replica's clock.
func (m *Manager) stillHolds(fleet string, lease Lease) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.rep.held[fleet]
	return ok && lease.Token != 0 && l.Token == lease.Token && m.rep.valid(m.rep.heldAt[fleet])
}

// leaseLost is Acquire's error when this replica lost fleet's lease while
// it recorded its busy mark: ErrNoIdle here, wrapping the *LeaseHeldError
// of the replica that holds it now when the store names one.
func (m *Manager) leaseLost(ctx context.Context, fleet string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.pol.CallTimeout)
	defer cancel()
	const why = "this replica's lease of the fleet ran out while its busy mark was written: nothing handed out"
	if leases, err := m.rep.ls.Leases(ctx); err == nil {
		for _, l := range leases {
			if l.Name == FleetLease(fleet) && l.Holder != m.rep.holder {
				return fmt.Errorf("gpufleet: fleet %s: %w here (%s): %w", fleet, ErrNoIdle, why,
					&LeaseHeldError{Name: l.Name, Holder: l.Holder, Expires: l.Expires})
			}
		}
	}
	return fmt.Errorf("gpufleet: fleet %s: %w (%s)", fleet, ErrNoIdle, why)
}

// voidAcquire voids the busy mark of id that an Acquire with token wrote
// (or perhaps wrote) before it answered an error: this replica never
// carries it out, and an IntentVoid is stored so that whichever replica
// holds the fleet skips it or, if it was carried out, puts the node back
// to idle when its busy mark came from that token. The void is written at
// once (a CallTimeout of its own: ctx may be what ended the mark's write);
// when that fails the loop writes it (voids), again until stored.
func (m *Manager) voidAcquire(ctx context.Context, fleet, id, token string) {
	m.mu.Lock()
	now := m.clock.Now()
	m.noteVoided(fleet, token, now)
	delete(m.acquired, id)
	m.mu.Unlock()
	in := Intent{Fleet: fleet, Kind: IntentVoid, InstanceID: id, Acquire: token, Call: NewRequestID(), At: now}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.pol.CallTimeout)
	_, err := m.rep.ls.PutIntent(wctx, in)
	cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.rep.voids[token] = in
	} else if _, held := m.rep.held[fleet]; held {
		m.rep.unread[fleet] = true
	}
	m.wake()
}

// writeVoids has the loop store the IntentVoids whose write failed when
// their Acquire answered, one task at a time (CallTimeout), again every
// Config.Interval until each is stored. m.mu held.
func (m *Manager) writeVoids(now time.Time) {
	r := m.rep
	if r == nil || len(r.voids) == 0 || now.Before(r.voidNext) || m.busy("voids") {
		return
	}
	pending := slices.Collect(maps.Values(r.voids))
	slices.SortFunc(pending, func(a, b Intent) int { return a.At.Compare(b.At) })
	m.launch("voids", taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
		stored, err := storeVoids(ctx, r.ls, pending)
		return func(now time.Time) {
			for _, in := range stored {
				delete(r.voids, in.Acquire)
				if _, held := r.held[in.Fleet]; held {
					r.unread[in.Fleet] = true
				}
			}
			if err != nil {
				r.voidNext = now.Add(m.cfg.Interval)
				m.event(Event{Type: EventStoreWriteFailed, Err: err.Error(),
					Message: fmt.Sprintf("%d void(s) of failed Acquires not stored yet: written again", len(pending)-len(stored))})
			}
		}
	})
}

// storeVoids writes voids in order until one fails; it returns those stored.
func storeVoids(ctx context.Context, ls LeaseStore, voids []Intent) ([]Intent, error) {
	for i, in := range voids {
		if _, err := ls.PutIntent(ctx, in); err != nil {
			return voids[:i], err
		}
	}
	return voids, nil
}

// unpick ends one Acquire's reservation of id (picking).
func (m *Manager) unpick(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.picking[id] <= 1 {
		delete(m.picking, id)
		return
	}
	m.picking[id]--
}

// takenBetween reports whether the intents with a Seq in (after, before),
// in Seq order, leave the instance id released or busy, and whether they
// delete its fleet. An Acquire's busy mark voided in that range is none:
// every holder skips or undoes it before it comes to the mark at before.
// So is a GiveBack's idle mark whose hand-out is not the one a busy mark
// in that range began (the node was idle at after: none before counts); a
// MarkBusy of the node while busy keeps its hand-out (the job's own mark).
func takenBetween(ins []Intent, id string, after, before int64) (taken, deleted bool) {
	in := func(x Intent) bool { return x.Seq > after && x.Seq < before }
	voided := map[string]bool{}
	for _, x := range ins {
		if in(x) && x.Kind == IntentVoid && x.Acquire != "" {
			voided[x.Acquire] = true
		}
	}
	var busy, released bool
	handOut := "" // the hand-out the marks in range leave the node under
	for _, x := range ins {
		if !in(x) {
			continue
		}
		switch {
		case x.Kind == IntentDelete:
			deleted = true
		case x.InstanceID != id:
		case x.Kind == IntentRelease:
			released = true
		case x.Kind == IntentBusy && x.Acquire == "":
			if !busy {
				handOut = "" // a MarkBusy of an idle node: a job with no hand-out
			}
			busy = true // of a held one: the job's own mark, its hand-out goes on
		case x.Kind == IntentBusy:
			if !voided[x.Acquire] {
				busy, handOut = true, x.Acquire
			}
		case x.Kind == IntentIdle && (x.Acquire == "" || x.Acquire == handOut):
			busy, handOut = false, ""
		}
	}
	return busy || released, deleted
}

// intentsAfter reads fleet's pending intents with a Seq after after, by
// Seq: only those when the store is an IntentTailReader.
func (m *Manager) intentsAfter(ctx context.Context, fleet string, after int64) ([]Intent, error) {
	if tail, ok := m.rep.ls.(IntentTailReader); ok {
		return tail.IntentsAfter(ctx, fleet, after)
	}
	return m.rep.ls.Intents(ctx, fleet)
}
