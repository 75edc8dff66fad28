package fleet

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// keepStored puts back in the queue the stored intents this replica
// queued as the holder of their fleet and has not carried out yet: they
// are carried out only as the store gives them back, in Seq order, so that
// an intent recorded earlier through another replica is never overtaken
// (and then skipped as older than the last one carried out). While queued
// they count for Acquire (a node released or marked busy is taken). Those
// of a fleet no longer held are dropped: its next holder reads them from
// the store. It returns the intents never stored. m.mu held.
func (m *Manager) keepStored(ops []intent) []intent {
	var local, keep []intent
	for _, op := range ops {
		_, held := m.rep.held[op.fleet]
		switch {
		case op.seq == 0:
			local = append(local, op)
		case held && op.seq > m.rep.applied[op.fleet]:
			keep = append(keep, op)
		}
	}
	m.intents.requeue(keep)
	return local
}

// readIntents starts, between lease syncs, a read of the stored intents of
// the fleets this replica recorded intents for as their holder, so that
// they are carried out at once, in Seq order with those recorded through
// other replicas. It shares the lease sync's task key: reads are applied
// in the order they were made; each is bounded by readBound, so that a
// hung one does not hold the next sync's renewals past the lease's TTL. A
// failed read is left to the next lease sync, which reads every intent.
// m.mu held.
func (m *Manager) readIntents() {
	r := m.rep
	if len(r.unread) == 0 {
		return
	}
	fleets := slices.Sorted(maps.Keys(r.unread))
	clear(r.unread)
	after := map[string]int64{}
	for _, f := range fleets {
		after[f] = r.applied[f]
	}
	tail, _ := r.ls.(IntentTailReader)
	m.launch("leases", taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
		got := map[string][]Intent{}
		tried := map[string]time.Time{} // fleet → when its read began
		for _, f := range fleets {
			var ins []Intent
			var err error
			tried[f] = m.clock.Now()
			ins, err = read(ctx, r, func(ctx context.Context) ([]Intent, error) {
				if tail != nil {
					// Those up to the last carried out would be skipped.
					return tail.IntentsAfter(ctx, f, after[f])
				}
				return r.ls.Intents(ctx, f)
			})
			if err != nil {
				break
			}
			got[f] = ins
		}
		return func(now time.Time) {
			m.applyStoredIntents(got, now)
			for f, at := range tried {
				m.noteMarksRead(f, at)
			}
		}
	})
}

// applyStoredIntents carries out the intents read from the store (each
// fleet's by Seq) of the fleets this replica holds; those carried out
// before are skipped. An Acquire's busy mark read with its IntentVoid is
// skipped. m.mu held.
func (m *Manager) applyStoredIntents(intents map[string][]Intent, now time.Time) {
	for _, name := range slices.Sorted(maps.Keys(intents)) {
		if _, ok := m.rep.held[name]; !ok {
			continue
		}
		for _, in := range intents[name] {
			if in.Kind == IntentVoid && in.Acquire != "" && in.Seq > m.rep.applied[name] {
				m.rep.voided[in.Acquire] = now // its busy mark, read with it, is skipped outright
			}
		}
		for _, in := range intents[name] {
			m.applyStored(in, now)
		}
	}
}

// beingDeleted is Apply's error for a fleet being deleted.
func beingDeleted(name string) error { return fmt.Errorf("gpufleet: fleet %s is being deleted", name) }

// storedDeleting answers Apply's error for a fleet being deleted as the
// shared store has it (replica mode): a Delete of it recorded and not yet
// acknowledged, or its record marked Deleting. The intents are read first:
// the holder stores the record before it acknowledges the Delete. A failed
// read answers ErrNotRecorded.
func (m *Manager) storedDeleting(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
	defer cancel()
	ins, err := m.rep.ls.Intents(ctx, name)
	if err != nil {
		return fmt.Errorf("gpufleet: fleet %s: apply %w: reading its intents: %w", name, unprefixed(ErrNotRecorded), err)
	}
	if slices.ContainsFunc(ins, func(in Intent) bool { return in.Kind == IntentDelete }) {
		return beingDeleted(name)
	}
	fleets, err := m.rep.ls.Fleets(ctx)
	if err != nil {
		return fmt.Errorf("gpufleet: fleet %s: apply %w: reading the fleets: %w", name, unprefixed(ErrNotRecorded), err)
	}
	if slices.ContainsFunc(fleets, func(f FleetRecord) bool { return f.Spec.Name == name && f.Deleting }) {
		return beingDeleted(name)
	}
	return nil
}

// markGate is a fleet's round of releases waiting for a read of its
// intents (marksRead).
type markGate struct {
	from   time.Time // the round began (Manager clock): a read must begin no earlier
	pass   int64     // the last pass that asked
	opened int64     // the pass in which it opened (0: not yet)
}

// marksRead reports whether the holder may release fleet's nodes for
// idleness or a scale-down in this pass: in replica mode, only once a read
// of the fleet's intents that began when such a release first fell due
// (a round: the passes that ask in a row) has been carried out. A MarkBusy
// (or MarkIdle, Release) recorded through another replica before then is
// carried out first, so that a node marked busy with a nil answer is not
// released under its job: without it the mark waited for the holder's next
// lease sync (LeaseTTL/3) and found the node terminating (tester AP: the
// node released 2 to 9 s after MarkBusy answered nil). It asks for the read
// (at once when no lease call is under way) and answers false until it is
// carried out; every release of the fleet due in the pass in which it opens
// goes, and a release falling due later begins a new round. A read that
// fails counts as made: a store out of reach stores no mark either, and an
// outage must not hold releases past their last safe moment. What remains
// is a mark stored while that read is under way (its latency), see
// MarkBusy. m.mu held.
func (m *Manager) marksRead(fleet string, now time.Time) bool {
	r := m.rep
	if r == nil {
		return true
	}
	g, ok := r.gates[fleet]
	switch {
	case ok && g.opened == r.pass:
		return true
	case !ok || g.opened != 0 || g.pass < r.pass-1:
		g = markGate{from: now}
	}
	g.pass = r.pass
	if read, ok := r.readFrom[fleet]; ok && !read.Before(g.from) {
		g.opened = r.pass
		r.gates[fleet] = g
		return true
	}
	r.gates[fleet] = g
	r.unread[fleet] = true
	if !m.busy("leases") {
		m.readIntents()
	}
	return false
}

// noteMarksRead notes that a read of fleet's intents, begun at at, was
// carried out (or failed). m.mu held.
func (m *Manager) noteMarksRead(fleet string, at time.Time) {
	if at.After(m.rep.readFrom[fleet]) {
		m.rep.readFrom[fleet] = at
	}
}
