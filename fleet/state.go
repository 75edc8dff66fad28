package fleet

import (
	"context"
	"errors"
	"slices"
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
	for _, r := range insts {
		if _, ok := m.insts[r.Instance.RequestID]; !ok {
			r := r
			m.insts[r.Instance.RequestID] = &r
		}
	}
	m.loaded = true
	return nil
}

// flush writes the changed records to the store and delivers pending events.
func (m *Manager) flush(ctx context.Context) error {
	m.mu.Lock()
	var fleets []FleetRecord
	var insts []InstanceRecord
	var goneF, goneI []string
	for name := range m.dirtyF {
		if f, ok := m.fleets[name]; ok {
			fleets = append(fleets, cloneFleet(*f))
		}
	}
	for id := range m.dirtyI {
		if r, ok := m.insts[id]; ok {
			insts = append(insts, cloneInstance(*r))
		}
	}
	for name := range m.goneF {
		goneF = append(goneF, name)
	}
	for id := range m.goneI {
		goneI = append(goneI, id)
	}
	clear(m.dirtyF)
	clear(m.dirtyI)
	clear(m.goneF)
	clear(m.goneI)
	m.mu.Unlock()
	var errs []error
	for _, f := range fleets {
		errs = append(errs, m.store.PutFleet(ctx, f))
	}
	for _, r := range insts {
		errs = append(errs, m.store.PutInstance(ctx, r))
	}
	for _, name := range goneF {
		errs = append(errs, m.store.DeleteFleet(ctx, name))
	}
	for _, id := range goneI {
		errs = append(errs, m.store.DeleteInstance(ctx, id))
	}
	m.deliver()
	return errors.Join(errs...)
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
