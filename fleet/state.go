package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// load reads the store once.
func (m *Manager) load(ctx context.Context) error {
	m.mu.Lock()
	loaded := m.loaded
	m.mu.Unlock()
	if loaded {
		return nil
	}
	fleets, err := m.store.Fleets(ctx)
	if err != nil {
		return err
	}
	insts, err := m.store.Instances(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loaded {
		return nil
	}
	for _, f := range fleets {
		if _, ok := m.fleets[f.Spec.Name]; !ok {
			f := f
			m.fleets[f.Spec.Name] = &f
			if f.KeyRequired && f.Spec.PrivateKey.IsZero() {
				m.keyMissing[f.Spec.Name] = true
			}
		}
	}
	now := m.clock.Now()
	for _, r := range insts {
		if _, ok := m.insts[r.Instance.RequestID]; !ok {
			r := r
			m.addRecord(&r)
			m.readAt[r.Instance.RequestID] = now
		}
	}
	m.loaded = true
	return nil
}

// flush writes the changed records to the store and delivers pending
// events. A write that fails stays dirty and is retried by the next flush
// (EventStoreWriteFailed says so once per failing spell). The first write
// that fails other than as a lost write (a stale version, a fence: that
// record's own answer) ends the flush: the records not tried yet stay
// dirty too, so that a store that cannot be reached, each call failing
// after its timeout, holds a step (and the releases of the next) for one
// timeout, not one per dirty record. Records whose last write failed are
// written after the others, so that one the store refuses for good does not
// keep the others from being tried.
func (m *Manager) flush(ctx context.Context) error {
	m.mu.Lock()
	var fleets []FleetRecord
	var insts, orphans []InstanceRecord
	base := ctx // without leases: the collector's orphan records (see collects)
	var goneF, goneI []string
	now := m.clock.Now()
	for name := range m.dirtyF {
		if f, ok := m.fleets[name]; ok {
			fleets = append(fleets, cloneFleet(*f))
		}
	}
	unwritten := map[string]bool{} // fleets with instance writes not made now: not deleted before them
	for id := range m.dirtyI {
		if r, ok := m.insts[id]; ok {
			if m.rep != nil && !m.holds(r.Instance.Fleet, now) {
				// Not this replica's to write now. A fleet it has whose lease
				// is not valid by its clock at this moment (a slow step): kept
				// dirty, written once the lease is renewed (a lost lease
				// drops the records). An orphan, or another replica's: left.
				if _, ok := m.fleets[r.Instance.Fleet]; ok || m.goneF[r.Instance.Fleet] {
					unwritten[r.Instance.Fleet] = true
					continue
				}
				if m.collects(r) {
					orphans = append(orphans, cloneInstance(*r))
				}
			} else {
				insts = append(insts, cloneInstance(*r))
			}
		}
		delete(m.dirtyI, id)
	}
	var appliedAt map[string]int64 // intents carried out before this flush: their effects are in it
	if m.rep != nil {
		appliedAt = map[string]int64{}
		for f, l := range m.rep.held {
			ctx = WithLease(ctx, l)
			appliedAt[f] = m.rep.applied[f]
		}
	}
	for name := range m.goneF {
		if !unwritten[name] {
			goneF = append(goneF, name)
			delete(m.goneF, name)
		}
	}
	var goneO []string // the collector's orphan records: deleted without a lease
	for id := range m.goneI {
		if m.orphanGone[id] {
			goneO = append(goneO, id)
		} else {
			goneI = append(goneI, id)
		}
	}
	fleetOf := map[string]string{}
	for _, r := range insts {
		fleetOf[r.Instance.RequestID] = r.Instance.Fleet
	}
	clear(m.dirtyF)
	clear(m.goneI)
	writeFailed := maps.Clone(m.writeFailed)
	settle := m.settleDue(now)
	m.mu.Unlock()
	failedLast := func(a, b string) int { // a record whose last write failed after the others, then by key
		if fa, fb := writeFailed[a], writeFailed[b]; fa != fb {
			if fa {
				return 1
			}
			return -1
		}
		return compareStrings(a, b)
	}
	slices.SortFunc(fleets, func(a, b FleetRecord) int { return failedLast(fleetKey(a.Spec.Name), fleetKey(b.Spec.Name)) })
	slices.SortFunc(insts, func(a, b InstanceRecord) int {
		return failedLast(instKey(a.Instance.RequestID), instKey(b.Instance.RequestID))
	})
	var errs []error
	var failF, failI, failGoneF, failGoneI, failO, staleO []string
	wroteF, wroteI := map[string]int64{}, map[string]int64{} // version written against
	var lost []string                                        // fleets whose writes were fenced or stale: their lease is gone
	tried, failed := map[string]bool{}, map[string]bool{}    // record writes (by key) tried, and failed
	var stop error                                           // the store is failing: nothing more is tried now
	write := func(key string, call func() error) (ok bool, err error) {
		if stop != nil {
			return false, nil // not tried: kept for the next flush
		}
		if key != "" {
			tried[key] = true
		}
		if err = call(); err != nil {
			errs = append(errs, err)
			if key != "" {
				failed[key] = true
			}
			if !lostWrite(err) {
				stop = err
			}
			return false, err
		}
		return true, nil
	}
	putFleet := func(f FleetRecord) {
		if ok, err := write(fleetKey(f.Spec.Name), func() error { return m.store.PutFleet(ctx, f) }); ok {
			wroteF[f.Spec.Name] = f.Version
		} else {
			if lostWrite(err) {
				lost = append(lost, f.Spec.Name)
			}
			failF = append(failF, f.Spec.Name)
		}
	}
	putInstance := func(r InstanceRecord) {
		if ok, err := write(instKey(r.Instance.RequestID), func() error { return m.store.PutInstance(ctx, r) }); ok {
			wroteI[r.Instance.RequestID] = r.Version
		} else {
			if lostWrite(err) {
				lost = append(lost, fleetOf[r.Instance.RequestID])
			}
			failI = append(failI, r.Instance.RequestID)
		}
	}
	// Every record whose last write went through, fleets then instances,
	// before any whose last write failed: a fleet record the store refuses
	// for good kept every instance record, and so every create, waiting
	// (tester AT).
	nF := slices.IndexFunc(fleets, func(f FleetRecord) bool { return writeFailed[fleetKey(f.Spec.Name)] })
	nI := slices.IndexFunc(insts, func(r InstanceRecord) bool { return writeFailed[instKey(r.Instance.RequestID)] })
	if nF < 0 {
		nF = len(fleets)
	}
	if nI < 0 {
		nI = len(insts)
	}
	for _, f := range fleets[:nF] {
		putFleet(f)
	}
	for _, r := range insts[:nI] {
		putInstance(r)
	}
	for _, f := range fleets[nF:] {
		putFleet(f)
	}
	for _, r := range insts[nI:] {
		putInstance(r)
	}
	for _, r := range orphans { // no lease covers them: unfenced, guarded by their Version
		if ok, err := write(instKey(r.Instance.RequestID), func() error { return m.store.PutInstance(base, r) }); ok {
			wroteI[r.Instance.RequestID] = r.Version
		} else if lostWrite(err) {
			staleO = append(staleO, r.Instance.RequestID)
		} else {
			failO = append(failO, r.Instance.RequestID)
		}
	}
	failedOf := map[string]bool{}
	for _, id := range failI {
		failedOf[fleetOf[id]] = true
	}
	for _, name := range goneF {
		if failedOf[name] {
			failGoneF = append(failGoneF, name) // its records first: retried with them
			continue
		}
		if ok, _ := write("", func() error { return m.store.DeleteFleet(ctx, name) }); !ok {
			failGoneF = append(failGoneF, name)
		}
	}
	for _, id := range goneI {
		if ok, _ := write("", func() error { return m.store.DeleteInstance(ctx, id) }); !ok {
			failGoneI = append(failGoneI, id)
		}
	}
	var wroteGoneO []string
	for _, id := range goneO {
		if ok, _ := write("", func() error { return m.store.DeleteInstance(base, id) }); ok {
			wroteGoneO = append(wroteGoneO, id)
		} else {
			failGoneI = append(failGoneI, id)
		}
	}
	if settle != nil && stop == nil { // the providers' trouble, after the records; its failure is only logged
		m.writeSettle(base, settle)
	}
	err := errors.Join(errs...)
	m.mu.Lock()
	for k := range m.writeFailed {
		if tried[k] && !failed[k] || !m.hasRecord(k) {
			delete(m.writeFailed, k) // written, or gone
		}
	}
	for k := range failed {
		m.writeFailed[k] = true
	}
	// The store now holds Version+1: the next write goes against it.
	for name, v := range wroteF {
		if f, ok := m.fleets[name]; ok && f.Version == v {
			f.Version++
		}
	}
	for id, v := range wroteI {
		if r, ok := m.insts[id]; ok && r.Version == v {
			r.Version++
		}
	}
	if m.rep != nil {
		m.noteWritten(appliedAt, unwritten, fleetOf, failF, failI, failGoneF)
		for _, e := range lost {
			if _, ok := m.rep.held[e]; ok {
				m.dropFleet(e, "a write was refused: another replica holds its lease now")
			}
		}
	}
	for _, name := range failF {
		if _, ok := m.fleets[name]; ok {
			m.dirtyF[name] = true
		}
	}
	for _, id := range append(failI, failO...) {
		if _, ok := m.insts[id]; ok {
			m.dirtyI[id] = true
		}
	}
	for _, id := range staleO {
		// Written since by another replica: the collector that took over
		// (this one's turn has passed), or the holder of the fleet applied
		// meanwhile. Theirs to track.
		if r := m.insts[id]; r != nil && m.collects(r) {
			m.forgetOrphan(id)
		}
	}
	for _, id := range wroteGoneO {
		delete(m.orphanGone, id)
	}
	for _, name := range failGoneF {
		m.goneF[name] = true
	}
	for _, id := range failGoneI {
		m.goneI[id] = true
	}
	switch {
	case err != nil && !m.storeFailing:
		m.storeFailing = true
		m.event(Event{Type: EventStoreWriteFailed, Err: err.Error(), Message: fmt.Sprintf(
			"%d record writes failed; %d records kept and retried at the next step",
			len(errs), len(failF)+len(failI)+len(failGoneF)+len(failGoneI))})
	case err == nil && m.storeFailing:
		m.storeFailing = false
		m.event(Event{Type: EventStoreWriteFailed, Message: "the store accepts writes again"})
	}
	m.mu.Unlock()
	m.deliver()
	return err
}

// fleetKey and instKey name a fleet's and an instance's record in
// Manager.writeFailed.
func fleetKey(name string) string { return "f/" + name }
func instKey(reqID string) string { return "i/" + reqID }

// hasRecord reports whether the record a fleetKey or instKey names is
// tracked. m.mu held.
func (m *Manager) hasRecord(key string) bool {
	if name, ok := strings.CutPrefix(key, "f/"); ok {
		return m.fleets[name] != nil
	}
	return m.insts[strings.TrimPrefix(key, "i/")] != nil
}

// prune forgets terminated records older than Policy.HistoryRetention. m.mu held.
func (m *Manager) prune(now time.Time) {
	for id, r := range m.insts {
		if r.Instance.Status != StatusTerminated || len(r.Instance.History) == 0 {
			continue
		}
		if now.Sub(r.Instance.History[len(r.Instance.History)-1].Time) >= m.pol.HistoryRetention {
			m.removeRecord(id)
			delete(m.dirtyI, id)
			delete(m.agentNext, id)
			delete(m.agentPathDown, id)
			delete(m.agentVerdict, id)
			m.forgetDeadlineDeferred(id)
			if m.collects(r) {
				m.orphanGone[id] = true
			}
			m.goneI[id] = true
		}
	}
}

// event queues an event for delivery. m.mu held.
func (m *Manager) event(e Event) {
	if e.Time.IsZero() {
		e.Time = m.clock.Now()
	}
	m.evMu.Lock()
	m.pending = append(m.pending, e)
	m.evMu.Unlock()
}

// deliver hands queued events to the logger and OnEvent, in order. Called
// without m.mu. Only one goroutine delivers at a time; an OnEvent callback
// that calls back into the Manager queues its events for the loop running.
func (m *Manager) deliver() {
	if !m.deliverMu.TryLock() {
		return
	}
	defer m.deliverMu.Unlock()
	for {
		m.evMu.Lock()
		batch := m.pending
		m.pending = nil
		m.evMu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, e := range batch {
			m.log.Info(string(e.Type), "fleet", e.Fleet, "provider", e.Provider, "instance", e.InstanceID,
				"message", e.Message, "err", e.Err)
			if m.cfg.OnEvent != nil {
				m.cfg.OnEvent(e)
			}
		}
	}
}

// addRecord tracks r (by request id, and in its fleet's index). m.mu held.
func (m *Manager) addRecord(r *InstanceRecord) {
	id := r.Instance.RequestID
	delete(m.counts, r.Instance.Fleet)
	m.insts[id] = r
	idx := m.byFleet[r.Instance.Fleet]
	if idx == nil {
		idx = map[string]*InstanceRecord{}
		m.byFleet[r.Instance.Fleet] = idx
	}
	idx[id] = r
}

// removeRecord forgets a record. m.mu held.
func (m *Manager) removeRecord(id string) {
	if r := m.insts[id]; r != nil {
		delete(m.counts, r.Instance.Fleet)
		delete(m.byFleet[r.Instance.Fleet], id)
		if len(m.byFleet[r.Instance.Fleet]) == 0 {
			delete(m.byFleet, r.Instance.Fleet)
		}
	}
	delete(m.insts, id)
	delete(m.readAt, id)
	delete(m.createMissed, id)
	delete(m.listedFrom, id)
	delete(m.attachRefused, id)
}

// sortRecords sorts records oldest first (ties by request id).
func sortRecords(out []*InstanceRecord) {
	slices.SortFunc(out, func(a, b *InstanceRecord) int {
		if c := a.Instance.Created.Compare(b.Instance.Created); c != 0 {
			return c
		}
		return compareStrings(a.Instance.RequestID, b.Instance.RequestID)
	})
}

// sortedRecords returns the records oldest first. m.mu held.
func (m *Manager) sortedRecords() []*InstanceRecord {
	out := make([]*InstanceRecord, 0, len(m.insts))
	for _, r := range m.insts {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *InstanceRecord) int {
		if c := a.Instance.Created.Compare(b.Instance.Created); c != 0 {
			return c
		}
		return compareStrings(a.Instance.RequestID, b.Instance.RequestID)
	})
	return out
}

func sortSpecs(s []Spec) {
	slices.SortFunc(s, func(a, b Spec) int { return compareStrings(a.Name, b.Name) })
}

// noteWritten advances, per held fleet, the intents whose effects are now
// stored: those carried out before a flush in which nothing of the fleet
// failed or was held back (the lease sync acknowledges up to it). m.mu held.
func (m *Manager) noteWritten(appliedAt map[string]int64, unwritten map[string]bool, fleetOf map[string]string, failF, failI, failGoneF []string) {
	bad := map[string]bool{}
	for _, f := range append(failF, failGoneF...) {
		bad[f] = true
	}
	for _, id := range failI {
		bad[fleetOf[id]] = true
	}
	for f, seq := range appliedAt {
		if _, held := m.rep.held[f]; held && !bad[f] && !unwritten[f] && seq > m.rep.written[f] {
			m.rep.written[f] = seq
		}
	}
}
