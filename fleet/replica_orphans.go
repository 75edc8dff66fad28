package fleet

import "time"

// With replicas, the orphans (labelled instances of this owner whose fleet
// the shared store does not have) are tracked by the collector: the
// replica holding the "gc" lease. Their records are stored, without a
// lease (no fleet's lease covers them; their Version guards the writes),
// so that the replica taking the collector lease over after the
// collector's death resumes them: the orphan's grace (OrphanSince,
// Policy.OrphanGrace) and a release under way carry over, rather than
// start again when the new collector finds the instance by its next
// listing (tester AP: a Hot Aisle VM found 35 minutes in, its finder dead
// 8 minutes later, found again 13 minutes after the first find and
// released 10 minutes after that: 59 minutes billed instead of 45).

// collectorsOrphan reports whether stored record in is an orphan the
// collector tracks: not terminated, of a fleet the shared store neither
// has nor has intents for (stored, a name of those).
func collectorsOrphan(in InstanceRecord, stored map[string]bool) bool {
	return in.Orphan && in.Instance.Status != StatusTerminated && !stored[in.Instance.Fleet]
}

// collects reports whether r is an orphan record this replica keeps as
// the collector's (not a record of a fleet it holds or has). m.mu held.
func (m *Manager) collects(r *InstanceRecord) bool {
	if m.rep == nil || !r.Orphan {
		return false
	}
	_, held := m.rep.held[r.Instance.Fleet]
	_, has := m.fleets[r.Instance.Fleet]
	return !held && !has && !m.goneF[r.Instance.Fleet]
}

// takeOrphans tracks the orphan records read from the store when this
// replica became the collector; one it tracks already is replaced by a
// newer stored version (another collector's since). m.mu held.
func (m *Manager) takeOrphans(stored []InstanceRecord, now time.Time) {
	for _, in := range stored {
		id := in.Instance.RequestID
		if r := m.insts[id]; r != nil {
			if !m.collects(r) || r.Version >= in.Version {
				continue
			}
			m.forgetOrphan(id)
		}
		in := in
		m.addRecord(&in)
		m.readAt[id] = now
	}
}

// dropOrphans forgets the collector's orphan records when this replica is
// no longer the collector: the one that is now reads them from the store.
// m.mu held.
func (m *Manager) dropOrphans() {
	for id, r := range m.insts {
		if m.collects(r) {
			m.forgetOrphan(id)
		}
	}
}

// forgetOrphan forgets one of the collector's orphan records (not the
// stored one). m.mu held.
func (m *Manager) forgetOrphan(id string) {
	m.cancelAgent(id)
	m.removeRecord(id)
	delete(m.dirtyI, id)
	delete(m.acquired, id)
}
