package fleet

import (
	"context"
)

// acquireStored is Acquire on the replica holding fleet. The busy mark is
// stored (an IntentBusy) before the node is handed out, so that if this
// replica dies the next holder carries it out rather than hand the node
// out again; when that write fails nothing is handed out. Then the
// fleet's intents recorded before the mark are read: a node that one of
// them, not yet carried out here, releases or marks busy is given up for
// another (the extra mark is then a no-op), and a recorded Delete answers
// ErrNotFound. When that read fails the node is handed out: its mark is
// stored.
func (m *Manager) acquireStored(ctx context.Context, fleet string) (Instance, error) {
	ctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
	defer cancel()
	skip := map[string]bool{}
	for {
		m.mu.Lock()
		r, err := m.pickIdle(fleet, skip)
		var inst Instance
		var seen int64 // the Seq up to which the pick saw the fleet's intents carried out
		if err == nil {
			inst, seen = handedOut(r), m.rep.applied[fleet]
		}
		m.mu.Unlock()
		if err != nil {
			return Instance{}, err
		}
		id := inst.RequestID
		seq, err := m.recordIntent(ctx, Intent{Fleet: fleet, Kind: IntentBusy, InstanceID: id}, intent{kind: intentBusy, name: id})
		if err != nil {
			m.mu.Lock()
			delete(m.acquired, id)
			m.mu.Unlock()
			return Instance{}, err
		}
		before, err := m.rep.ls.Intents(ctx, fleet)
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
