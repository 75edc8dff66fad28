package fleet

import (
	"fmt"
	"time"
)

// adoptUntracked tracks labelled instances no record knows: a fleet's own
// (created by a Manager that crashed, or before a restart without a store)
// are adopted; those no fleet claims are orphans, released after
// OrphanGrace. Unlabelled ones are reported once and never touched. m.mu held.
func (m *Manager) adoptUntracked(provider string, o *observation, now time.Time) {
	known := make(map[string]bool, len(m.insts))
	for _, r := range m.insts {
		if r.Instance.Provider == provider && r.Instance.ID != "" {
			known[r.Instance.ID] = true
		}
	}
	for _, seen := range o.list {
		if known[seen.ID] || m.abandoned[provider+"/"+seen.ID] {
			continue
		}
		if seen.RequestID == "" {
			key := provider + "/" + seen.ID
			if !m.unlabelled[key] {
				m.unlabelled[key] = true
				m.event(Event{Type: EventUnlabelledFound, Provider: provider, InstanceID: seen.ID,
					Message: "not created by gpufleet; left alone"})
			}
			continue
		}
		if _, dup := m.insts[seen.RequestID]; dup {
			continue // resolved through the uncertain-create path
		}
		m.track(seen, now)
	}
	m.claimOrphans(now)
}

// track starts a record for a labelled instance found in a list. m.mu held.
func (m *Manager) track(seen Instance, now time.Time) {
	r := &InstanceRecord{Instance: cloneInst(seen)}
	r.Instance.Status, r.Instance.History = "", nil
	if r.Instance.Created.IsZero() {
		r.Instance.Created = now
	}
	m.insts[seen.RequestID] = r
	m.setStatus(r, StatusProvisioning, "found by label", now)
	f := m.fleets[seen.Fleet]
	switch {
	case f == nil:
		r.Orphan, r.OrphanSince = true, now
		m.event(Event{Type: EventOrphanFound, Fleet: seen.Fleet, Provider: seen.Provider, InstanceID: seen.ID,
			At: now.Add(m.pol.OrphanGrace), Message: fmt.Sprintf("labelled for fleet %q which this Manager does not have; released after %s unless claimed", seen.Fleet, m.pol.OrphanGrace)})
	case f.Deleting:
		m.event(Event{Type: EventInstanceAdopted, Fleet: seen.Fleet, Provider: seen.Provider, InstanceID: seen.ID, Message: "found by label; its fleet is being deleted"})
		m.requestRelease(r, "fleet deleted", m.policyFor(f), now, true)
		return
	default:
		m.event(Event{Type: EventInstanceAdopted, Fleet: seen.Fleet, Provider: seen.Provider, InstanceID: seen.ID, Message: "found by label"})
	}
	if seen.Running() {
		m.markRunning(r, now)
	}
}

// claimOrphans adopts orphans whose fleet appeared and releases those past
// their grace period. m.mu held.
func (m *Manager) claimOrphans(now time.Time) {
	for _, r := range m.insts {
		if !r.Orphan || r.Termination != nil || r.Instance.Status == StatusTerminated {
			continue
		}
		if f := m.fleets[r.Instance.Fleet]; f != nil && !f.Deleting {
			r.Orphan = false
			m.dirtyI[r.Instance.RequestID] = true
			m.event(Event{Type: EventInstanceAdopted, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID, Message: "its fleet was applied"})
			continue
		}
		if now.Sub(r.OrphanSince) >= m.pol.OrphanGrace {
			m.requestRelease(r, "orphan", m.pol.Release, now, true)
		}
	}
}
