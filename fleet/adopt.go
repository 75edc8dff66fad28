package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
	holders := make(map[string][]*InstanceRecord, len(m.insts))
	for _, r := range m.insts {
		if r.Instance.Provider == provider && r.Instance.ID != "" {
			holders[r.Instance.ID] = append(holders[r.Instance.ID], r)
		}
	}
	gc := m.isGC(now)
	for _, seen := range o.list {
		key := provider + "/" + seen.ID
		if m.knownRental(holders[seen.ID], seen) || m.abandoned[key+"/"+seen.RequestID] {
			continue
		}
		if m.rep != nil && !m.holds(seen.Fleet, now) && (!gc || m.storedFleetName(seen.Fleet)) {
			continue // another replica's fleet, or the collector's work
		}
		if seen.RequestID == "" && seen.Owner == m.owner && seen.Fleet != "" {
			seen.RequestID = tagRequestID(provider, seen.ID) // its label was edited; its tags say it is ours
		}
		if r := o.given[seen.ID]; r != nil && seen.RequestID == "" && r.Instance.ID == "" {
			m.relabel[r.Instance.RequestID] = true
			r.Inferred = true
			m.readopt(r, seen, "found unlabelled after its create was given up (a new instance of its type since, no more of them than such creates); labelling it", now)
			continue
		}
		switch {
		case seen.RequestID == "" && m.mayBeACreates(provider, seen, o.from):
			continue // perhaps a create's of this Manager: paired or reported later
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
	m.seen[key], m.shown[key] = now, now
	m.setStatus(r, StatusProvisioning, "found by label", now)
	f := m.fleets[seen.Fleet]
	switch {
	case f == nil:
		r.Orphan, r.OrphanSince = true, now
		delete(m.counts, seen.Fleet)
		at := m.orphanReleaseAt(r, now)
		m.event(Event{Type: EventOrphanFound, Fleet: seen.Fleet, Provider: seen.Provider, InstanceID: seen.ID,
			At: at, Message: fmt.Sprintf("labelled for fleet %q which this Manager does not have; released after %s unless claimed", seen.Fleet, at.Sub(now).Round(time.Second))})
	case f.Deleting:
		m.event(Event{Type: EventInstanceAdopted, Fleet: seen.Fleet, Provider: seen.Provider, InstanceID: seen.ID, Message: "found by label; its fleet is being deleted"})
		m.requestRelease(r, "fleet deleted", m.policyFor(f), now, true)
		return r
	default:
		m.event(Event{Type: EventInstanceAdopted, Fleet: seen.Fleet, Provider: seen.Provider, InstanceID: seen.ID, Message: "found by label"})
	}
	if seen.Running() {
		r.PendingSeen = m.pendingSeen(r, time.Time{}, now)
		m.markRunning(r, now)
	}
	if seen.Stopped {
		m.stoppedOutOfBand(r, now) // before the fleet's size is weighed: a stopped member is no member
	}
	return r
}

// claimOrphans adopts orphans whose fleet appeared and releases those past
// their grace period, or at the last safe moment of their billed unit when
// the grace would run past it (orphanReleaseAt). m.mu held.
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
		if !now.Before(m.orphanReleaseAt(r, now)) {
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

// readopt tracks again a create that was given up (CreateUnresolved) once
// its resource shows up under its label: whatever the record said, it is
// the fleet's again if the fleet wants it, else released. m.mu held.
func (m *Manager) readopt(r *InstanceRecord, seen Instance, why string, now time.Time) {
	m.event(Event{Type: EventInstanceAdopted, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: seen.ID, Message: why})
	r.Termination, r.CreateUncertain = nil, false
	m.setStatus(r, StatusPending, "showed up under its label", now)
	// Given up and found later, perhaps much later: a start the provider
	// does not give lies between earliestStart and now (CreatedLatest).
	r.CreatedUnknown = false
	if seen.Created.IsZero() {
		r.CreatedLatest = now
	}
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
