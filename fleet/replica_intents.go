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
// in the order they were made. A failed read is left to the next lease
// sync, which reads every intent. m.mu held.
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
		for _, f := range fleets {
			var ins []Intent
			var err error
			if tail != nil {
				// Those up to the last carried out would be skipped.
				ins, err = tail.IntentsAfter(ctx, f, after[f])
			} else {
				ins, err = r.ls.Intents(ctx, f)
			}
			if err != nil {
				break
			}
			got[f] = ins
		}
		return func(now time.Time) { m.applyStoredIntents(got, now) }
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
