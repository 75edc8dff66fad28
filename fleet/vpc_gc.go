package fleet

import (
	"context"
	"errors"
	"time"
)

// observeVPCs applies one listing of a provider's VPCs: an uncertain VPC
// create found by its label settles; a cluster fleet without a VPC adopts
// the one labelled for it (a fleet never gets a second); this owner's
// labelled VPCs that no fleet claims become orphans, deleted after
// Policy.OrphanGrace; unlabelled and other owners' VPCs are reported once
// and never touched. m.mu held.
func (m *Manager) observeVPCs(provider string, vpcs []VPC, now time.Time) {
	listed := map[string]bool{}
	for _, v := range vpcs {
		listed[v.ID] = true
		key := provider + "/vpc/" + v.ID
		switch {
		case v.RequestID == "":
			continue
		case !m.owns(v.Owner, v.RequestID) && !m.knownVPC(v):
			m.reportOnce(key, Event{Type: EventForeignFound, Fleet: v.Fleet, Provider: provider, InstanceID: v.ID, Message: "VPC: " + foreignMessage(v.Owner)})
			continue
		}
		if _, deleted := m.deletedVPCs[v.ID]; deleted {
			continue
		}
		if m.rep != nil && !m.holds(v.Fleet, now) && (!m.isGC(now) || m.storedFleetName(v.Fleet)) {
			continue // another replica's fleet, or the collector's work
		}
		f := m.fleets[v.Fleet]
		switch {
		case f != nil && f.VPC != nil && f.VPC.VPC.ID == v.ID:
			delete(m.orphanVPCs, v.ID)
		case f != nil && f.VPC != nil && f.VPC.Pending && f.VPC.VPC.RequestID == v.RequestID && !m.busy("vpc/"+v.Fleet):
			m.settleVPC(f, v)
		case f != nil && f.VPC == nil && f.Spec.Placement == PlacementCluster && !f.Deleting && m.vpcFits(f, v):
			f.VPC = &VPCRecord{VPC: v, Since: now}
			m.dirtyF[f.Spec.Name] = true
			delete(m.orphanVPCs, v.ID)
			m.event(Event{Type: EventVPCAdopted, Fleet: f.Spec.Name, Provider: provider, Message: v.ID + " found by label"})
		default:
			m.orphanVPC(v, now)
		}
	}
	for id, rec := range m.orphanVPCs {
		if rec.VPC.Provider == provider && !listed[id] && !m.busy("vpcorphan/"+id) {
			delete(m.orphanVPCs, id) // gone
		}
	}
	for id, at := range m.deletedVPCs {
		if !listed[id] || now.Sub(at) > time.Hour {
			delete(m.deletedVPCs, id)
		}
	}
}

// knownVPC reports whether a fleet record holds v. m.mu held.
func (m *Manager) knownVPC(v VPC) bool {
	f := m.fleets[v.Fleet]
	return f != nil && f.VPC != nil && (f.VPC.VPC.ID == v.ID || (f.VPC.Pending && f.VPC.VPC.RequestID == v.RequestID))
}

// vpcFits reports whether a fleet's members (if any) live where v is. m.mu held.
func (m *Manager) vpcFits(f *FleetRecord, v VPC) bool {
	a := m.anchor(f)
	return a == nil || (a.Provider == v.Provider && a.Region == v.Region)
}

// orphanVPC starts the grace period of a labelled VPC no fleet claims. m.mu held.
func (m *Manager) orphanVPC(v VPC, now time.Time) {
	if _, seen := m.orphanVPCs[v.ID]; seen {
		return
	}
	rec := &VPCRecord{VPC: v, NextAttempt: now.Add(m.pol.OrphanGrace)}
	m.orphanVPCs[v.ID] = rec
	m.event(Event{Type: EventOrphanFound, Fleet: v.Fleet, Provider: v.Provider, InstanceID: v.ID, At: rec.NextAttempt,
		Message: "VPC labelled for a fleet that does not claim it"})
}

// collectOrphanVPCs deletes orphan VPCs past their grace. m.mu held.
func (m *Manager) collectOrphanVPCs(now time.Time) {
	for id, rec := range m.orphanVPCs {
		vp, ok := m.providers[rec.VPC.Provider].(VPCProvider)
		if !ok || now.Before(rec.NextAttempt) || m.free(taskCall) <= 0 {
			continue
		}
		m.launch("vpcorphan/"+id, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
			err := vp.DeleteVPC(ctx, id)
			return func(now time.Time) {
				rec := m.orphanVPCs[id]
				if rec == nil {
					return
				}
				if err == nil || errors.Is(err, ErrNotFound) {
					delete(m.orphanVPCs, id)
					m.deletedVPCs[id] = now
					m.event(Event{Type: EventVPCDeleted, Fleet: rec.VPC.Fleet, Provider: rec.VPC.Provider, Message: id + " (orphan)"})
					return
				}
				rec.Attempts++
				rec.NextAttempt = now.Add(backoff(rec.Attempts, 10*time.Second, 2*time.Minute))
				m.event(Event{Type: EventVPCDeleteRetry, Fleet: rec.VPC.Fleet, Provider: rec.VPC.Provider, Err: err.Error(), At: rec.NextAttempt, Message: id + " (orphan)"})
			}
		})
	}
}
