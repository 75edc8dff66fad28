package fleet

import (
	"context"
	"errors"
	"slices"
	"time"
)

// acquireStored is Acquire on the replica holding fleet. The busy mark is
// stored (an IntentBusy) before the node is handed out, so that if this
// replica dies the next holder carries it out rather than hand the node
// out again; when that write fails nothing is handed out. Then the
// fleet's intents recorded before the mark are read: a node that one of
// them, not yet carried out here, releases or marks busy is given up for
// another (the extra mark is then a no-op), and a recorded Delete answers
// ErrNotFound. When that read fails the node is handed out: its mark is
// stored. When this replica's view (its records and the intents it
// queued) has no idle node, the fleet's stored intents are read once and
// counted too: a MarkIdle or a Delete recorded through another replica and
// not yet carried out here.
func (m *Manager) acquireStored(ctx context.Context, fleet string) (Instance, error) {
	ctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
	defer cancel()
	skip := map[string]bool{}
	var stored []Intent // the fleet's stored intents, once read
	read := false
	for {
		m.mu.Lock()
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
		local := intent{kind: intentBusy, name: id}
		seq, err := m.recordIntent(ctx, Intent{Fleet: fleet, Kind: IntentBusy, InstanceID: id, Acquire: token}, local)
		if err != nil {
			if seq = m.recordedAnyway(ctx, fleet, id, seen, token); seq == 0 {
				m.unpick(id)
				return Instance{}, err
			}
			m.mu.Lock()
			m.noteRecorded(fleet, seq, local)
			m.mu.Unlock()
		}
		m.unpick(id) // its busy mark is queued: it counts from there
		before, err := m.intentsAfter(ctx, fleet, seen)
		if err != nil {
			return inst, nil
		}
		taken, deleted := takenBetween(before, id, seen, seq)
		switch {
		case deleted:
			return Instance{}, classed(ErrNotFound, "fleet %s (its Delete is recorded)", fleet)
		case taken:
			skip[id] = true
			continue
		}
		return inst, nil
	}
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
// delete its fleet.
func takenBetween(ins []Intent, id string, after, before int64) (taken, deleted bool) {
	var busy, released bool
	for _, in := range ins {
		if in.Seq <= after || in.Seq >= before {
			continue
		}
		switch {
		case in.Kind == IntentDelete:
			deleted = true
		case in.InstanceID != id:
		case in.Kind == IntentRelease:
			released = true
		case in.Kind == IntentBusy:
			busy = true
		case in.Kind == IntentIdle:
			busy = false
		}
	}
	return busy || released, deleted
}

// recordedAnyway is, after the write of Acquire's busy mark of id (its token)
// answered an error, the mark's Seq when a read of fleet's intents after
// seen finds it stored all the same (the answer was lost, not the write),
// else 0: then the node is given up (it stays idle) and the token voided,
// so that a write committed after all is not carried out by this holder.
// The read has a CallTimeout of its own: ctx may be what ended the write.
func (m *Manager) recordedAnyway(ctx context.Context, fleet, id string, seen int64, token string) int64 {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.pol.CallTimeout)
	defer cancel()
	ins, err := m.intentsAfter(rctx, fleet, seen)
	if err == nil {
		for _, in := range ins {
			if in.Acquire == token {
				return in.Seq
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	for t, at := range m.rep.voided {
		if now.Sub(at) > time.Hour {
			delete(m.rep.voided, t) // never stored after all
		}
	}
	m.rep.voided[token] = now
	delete(m.acquired, id)
	return 0
}

// intentsAfter reads fleet's pending intents with a Seq after after, by
// Seq: only those when the store is an IntentTailReader.
func (m *Manager) intentsAfter(ctx context.Context, fleet string, after int64) ([]Intent, error) {
	if tail, ok := m.rep.ls.(IntentTailReader); ok {
		return tail.IntentsAfter(ctx, fleet, after)
	}
	return m.rep.ls.Intents(ctx, fleet)
}
