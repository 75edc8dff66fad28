package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"time"
)

// owns reports whether a resource labelled with owner and request id is
// this Manager's: its owner, or the format before owners when the Store
// knows the request or Config.AdoptLegacyLabels says so. m.mu held.
func (m *Manager) owns(owner, reqID string) bool {
	switch owner {
	case m.owner:
		return true
	case "":
		return m.cfg.AdoptLegacyLabels || m.insts[reqID] != nil
	}
	return false
}

// reportOnce emits a report about a resource at most once per process. m.mu held.
func (m *Manager) reportOnce(key string, e Event) {
	if !m.reported[key] {
		m.reported[key] = true
		m.event(e)
	}
}

// adoptUntracked tracks labelled instances of this owner that no record
// knows: a fleet's own (created by a Manager that crashed, or before a
// restart without a store) are adopted; those no fleet claims are orphans,
// released after OrphanGrace. Unlabelled ones and other owners' are
// reported once and never touched. m.mu held.
func (m *Manager) adoptUntracked(provider string, o *observation, now time.Time) {
	known := make(map[string]bool, len(m.insts))
	for _, r := range m.insts {
		if r.Instance.Provider == provider && r.Instance.ID != "" {
			known[r.Instance.ID] = true
		}
	}
	gc := m.isGC(now)
	late := m.lateUnlabelled(provider, o, known, now)
	for _, seen := range o.list {
		key := provider + "/" + seen.ID
		if known[seen.ID] || m.abandoned[key] {
			continue
		}
		if m.rep != nil && !m.holds(seen.Fleet, now) && (!gc || m.storedFleetName(seen.Fleet)) {
			continue // another replica's fleet, or the collector's work
		}
		if seen.RequestID == "" && seen.Owner == m.owner && seen.Fleet != "" {
			seen.RequestID = tagRequestID(provider, seen.ID) // its label was edited; its tags say it is ours
		}
		if r := late[seen.ID]; r != nil && seen.RequestID == "" {
			m.relabel[r.Instance.RequestID] = true
			m.readopt(r, seen, "found unlabelled after its create was given up (the only new instance of its offer since); labelling it", now)
			continue
		}
		switch {
		case seen.RequestID == "":
			m.reportOnce(key, Event{Type: EventUnlabelledFound, Provider: provider, InstanceID: seen.ID,
				Message: "not created by gpufleet; left alone"})
			continue
		case !m.owns(seen.Owner, seen.RequestID):
			m.reportOnce(key, Event{Type: EventForeignFound, Fleet: seen.Fleet, Provider: provider, InstanceID: seen.ID,
				Message: foreignMessage(seen.Owner)})
			continue
		}
		if r, dup := m.insts[seen.RequestID]; dup {
			if r.Instance.ID == "" && r.Instance.Provider == provider && r.Instance.Status == StatusTerminated {
				m.readopt(r, seen, "showed up under the label of a create given up earlier; tracked again", now)
				continue
			}
			if r.Instance.ID == "" && r.Instance.Provider == provider {
				continue // resolved through the uncertain-create path
			}
			if r.Instance.ID != "" && r.Instance.ID != seen.ID {
				m.reportOnce(key, Event{Type: EventDuplicateFound, Fleet: seen.Fleet, Provider: provider, InstanceID: seen.ID,
					Message: fmt.Sprintf("a second resource carries request %s (the first is %s); released", seen.RequestID, r.Instance.ID)})
				dupRec := m.track(seen, seen.RequestID+"-"+seen.ID, now)
				m.requestRelease(dupRec, "duplicate", ReleaseAtReservationEnd, now, true)
			}
			continue
		}
		m.track(seen, seen.RequestID, now)
	}
}

func foreignMessage(owner string) string {
	if owner == "" {
		return "labelled by gpufleet before owners existed and unknown to this Manager's Store; left alone (set Config.AdoptLegacyLabels to collect such resources)"
	}
	return fmt.Sprintf("belongs to gpufleet owner %q, not this Manager; left alone", owner)
}

// track starts a record for a labelled instance found in a list. m.mu held.
func (m *Manager) track(seen Instance, key string, now time.Time) *InstanceRecord {
	r := &InstanceRecord{Instance: cloneInst(seen)}
	r.Instance.RequestID = key
	r.Instance.Status, r.Instance.History = "", nil
	if r.Instance.Created.IsZero() {
		r.Instance.Created = now
		r.CreatedUnknown = true
	}
	m.addRecord(r)
	m.seen[key] = now
	m.setStatus(r, StatusProvisioning, "found by label", now)
	f := m.fleets[seen.Fleet]
	switch {
	case f == nil:
		r.Orphan, r.OrphanSince = true, now
		delete(m.counts, seen.Fleet)
		m.event(Event{Type: EventOrphanFound, Fleet: seen.Fleet, Provider: seen.Provider, InstanceID: seen.ID,
			At: now.Add(m.pol.OrphanGrace), Message: fmt.Sprintf("labelled for fleet %q which this Manager does not have; released after %s unless claimed", seen.Fleet, m.pol.OrphanGrace)})
	case f.Deleting:
		m.event(Event{Type: EventInstanceAdopted, Fleet: seen.Fleet, Provider: seen.Provider, InstanceID: seen.ID, Message: "found by label; its fleet is being deleted"})
		m.requestRelease(r, "fleet deleted", m.policyFor(f), now, true)
		return r
	default:
		m.event(Event{Type: EventInstanceAdopted, Fleet: seen.Fleet, Provider: seen.Provider, InstanceID: seen.ID, Message: "found by label"})
	}
	if seen.Running() {
		m.markRunning(r, now)
	}
	if seen.Stopped {
		m.stoppedOutOfBand(r, now) // before the fleet's size is weighed: a stopped member is no member
	}
	return r
}

// claimOrphans adopts orphans whose fleet appeared and releases those past
// their grace period. m.mu held.
func (m *Manager) claimOrphans(now time.Time) {
	for _, r := range m.insts {
		if !r.Orphan || r.Termination != nil || r.Instance.Status == StatusTerminated {
			continue
		}
		if m.rep != nil && !m.holds(r.Instance.Fleet, now) && m.storedFleetName(r.Instance.Fleet) {
			m.removeRecord(r.Instance.RequestID) // its fleet exists: its holder tracks it
			continue
		}
		if f := m.fleets[r.Instance.Fleet]; f != nil && !f.Deleting {
			r.Orphan = false
			delete(m.counts, r.Instance.Fleet)
			m.dirtyI[r.Instance.RequestID] = true
			m.event(Event{Type: EventInstanceAdopted, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID, Message: "its fleet was applied"})
			continue
		}
		if now.Sub(r.OrphanSince) >= m.pol.OrphanGrace {
			m.requestRelease(r, "orphan", m.pol.Release, now, true)
		}
	}
}

// unlabelledOf lists the unlabelled instances of offer o's type that the
// latest listing of its provider showed. m.mu held.
func (m *Manager) unlabelledOf(o Offer) []string {
	var out []string
	if obs := m.obs[o.Provider]; obs != nil {
		for _, i := range obs.list {
			if i.RequestID == "" && i.Offer.InstanceType == o.InstanceType {
				out = append(out, i.ID)
			}
		}
	}
	return out
}

// unlabelledMatch finds the instance an uncertain create of an offer with
// LabelAfterCreate made if its label was never written: a listed unlabelled
// instance of the same type that was not there before the call and that no
// record holds. When several such creates are pending and as many such
// instances are listed, they are paired in order (they are interchangeable:
// the labels then say which fleet each serves); any other count is
// ambiguous and none is taken (they are reported as unlabelled). m.mu held.
func (m *Manager) unlabelledMatch(r *InstanceRecord, o *observation) (Instance, bool) {
	if !r.Instance.Offer.LabelAfterCreate {
		return Instance{}, false
	}
	known := map[string]bool{}
	for _, x := range m.insts {
		if x.Instance.Provider == r.Instance.Provider && x.Instance.ID != "" {
			known[x.Instance.ID] = true
		}
	}
	var pending []*InstanceRecord
	for _, x := range m.insts {
		if x.Instance.ID == "" && x.CreateUncertain && x.Instance.Provider == r.Instance.Provider &&
			x.Instance.Offer.InstanceType == r.Instance.Offer.InstanceType && !m.busy("create/"+x.Instance.RequestID) {
			pending = append(pending, x)
		}
	}
	before := map[string]bool{}
	for _, x := range pending {
		for _, id := range x.UnlabelledBefore {
			before[id] = true
		}
	}
	var found []Instance
	for _, i := range o.list {
		if i.RequestID == "" && i.Offer.InstanceType == r.Instance.Offer.InstanceType && !known[i.ID] && !before[i.ID] {
			found = append(found, i)
		}
	}
	if len(found) == 0 || len(found) != len(pending) {
		return Instance{}, false
	}
	sortRecords(pending)
	sort.Slice(found, func(a, b int) bool { return found[a].ID < found[b].ID })
	for k, x := range pending {
		if x == r {
			return found[k], true
		}
	}
	return Instance{}, false
}

// readopt tracks again a create that was given up (CreateUnresolved) once
// its resource shows up under its label: whatever the record said, it is
// the fleet's again if the fleet wants it, else released. m.mu held.
func (m *Manager) readopt(r *InstanceRecord, seen Instance, why string, now time.Time) {
	m.event(Event{Type: EventInstanceAdopted, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: seen.ID, Message: why})
	r.Termination, r.CreateUncertain = nil, false
	m.setStatus(r, StatusPending, "showed up under its label", now)
	m.created(r, seen, "", now)
	if seen.Stopped {
		m.stoppedOutOfBand(r, now)
	}
	if f := m.fleets[r.Instance.Fleet]; r.Termination != nil {
		return
	} else if f == nil || f.Deleting {
		m.requestRelease(r, "fleet deleted", m.policyFor(f), now, true)
	} else if m.surplus(r.Instance.Fleet) {
		m.requestRelease(r, "scale down", m.policyFor(f), now, true)
	}
}

// storedFleetName reports whether the last lease sync saw fleet in the
// shared store. m.mu held.
func (m *Manager) storedFleetName(fleet string) bool {
	_, ok := m.rep.fleetKeys[fleet]
	return ok
}

// tagRequestID is the request id given to an instance found by its owner
// and fleet tags alone (its label edited out of band, and the Store that
// knew its request lost): derived from its provider id, so that every
// process gives it the same one; its label is then written with it.
func tagRequestID(provider, id string) string {
	sum := sha256.Sum256([]byte(provider + "/" + id))
	return hex.EncodeToString(sum[:6])
}

// lateCreateWindow is how long after a create of an offer with
// LabelAfterCreate was given up (CreateUnresolved) a new unlabelled
// instance of its type is still taken for it: a provision that the API
// finished after the client's deadline and the lookup grace.
const lateCreateWindow = time.Hour

// lateUnlabelled pairs the unlabelled instances of a listing that no
// record holds and that were not there before the call with the creates of
// the same type given up within lateCreateWindow (an uncertain create that
// was never resolved), when there are exactly as many of each; any other
// count is ambiguous and nothing is paired. m.mu held.
func (m *Manager) lateUnlabelled(provider string, o *observation, known map[string]bool, now time.Time) map[string]*InstanceRecord {
	given := map[string][]*InstanceRecord{} // instance type → creates given up
	before, pending := map[string]bool{}, map[string]bool{}
	for _, r := range m.insts {
		i := r.Instance
		if i.Provider == provider && i.ID == "" && r.CreateUncertain {
			pending[i.Offer.InstanceType] = true // an uncertain create still looked up: that path pairs
		}
		if i.Provider != provider || i.ID != "" || i.Status != StatusTerminated || !i.Offer.LabelAfterCreate ||
			r.CreateUncertainSince.IsZero() || len(i.History) == 0 || now.Sub(i.History[len(i.History)-1].Time) > lateCreateWindow {
			continue
		}
		given[i.Offer.InstanceType] = append(given[i.Offer.InstanceType], r)
		for _, id := range r.UnlabelledBefore {
			before[id] = true
		}
	}
	if len(given) == 0 {
		return nil
	}
	found := map[string][]string{}
	for _, i := range o.list {
		if i.RequestID == "" && len(given[i.Offer.InstanceType]) > 0 && !known[i.ID] && !before[i.ID] {
			found[i.Offer.InstanceType] = append(found[i.Offer.InstanceType], i.ID)
		}
	}
	out := map[string]*InstanceRecord{}
	for typ, rs := range given {
		ids := found[typ]
		if len(ids) != len(rs) || pending[typ] {
			continue
		}
		sortRecords(rs)
		sort.Strings(ids)
		for k, r := range rs {
			out[ids[k]] = r
		}
	}
	return out
}
