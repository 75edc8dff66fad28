package fleet

import (
	"context"
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
	m.launch("leases", taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
		got := map[string][]Intent{}
		for _, f := range fleets {
			ins, err := r.ls.Intents(ctx, f)
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
// before are skipped. m.mu held.
func (m *Manager) applyStoredIntents(intents map[string][]Intent, now time.Time) {
	for _, name := range slices.Sorted(maps.Keys(intents)) {
		if _, ok := m.rep.held[name]; !ok {
			continue
		}
		for _, in := range intents[name] {
			m.applyStored(in, now)
		}
	}
}
