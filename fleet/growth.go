package fleet

import "time"

// An Apply that raises a fleet's Nodes asks for that many nodes now: the
// fleet's idle nodes are wanted, whatever their idle clock said before.
// Without this, an idle node past its minimum and its IdleTimeout, kept as
// the fleet's re-buy spare, lost its spare slot to the new node once that
// one was ready (never used, inside its minimum: first in Acquire's
// order) and was released in the same pass, the idle release lowering
// Nodes again: the 2-node job the growth was for never got two nodes, and
// the new node billed its minimum for nobody. A gate that held idle
// releases only while members were on their way did not help: the new
// node is ready in the pass that would release the old one.
//
// The rule (FleetRecord.GrowApplied, GrowMet): a node idle at an Apply
// that raises Nodes is not released as idle until that growth is settled
// — met, when the fleet has as many members ready to run a job (runnable,
// busy ones counted) as Nodes asks for; or given up, when Nodes is
// lowered again to no more than it was before the growth (GrowFrom; a
// lowering that still asks for more goes on with the growth, met at the
// new Nodes), the fleet is deleted or stalls, or it is still short after
// the time a create may take (growthWait) — and from then on its
// idle clock (IdleTimeout, the re-buy hold) counts from the moment the
// growth was met, or from the Apply when it was given up. If no job comes,
// the nodes go later by the usual rules. Nodes that go idle after the
// Apply keep their own clock, and a growth that finds no idle node changes
// nothing.

// growthNotice is the longest an hourly-billed node kept for a growth is
// kept after the growth was settled for its caller to take it (IdleTimeout
// when shorter; see idleReleaseAt): released at once when its hour's last
// safe moment has passed, it would be gone in the pass that saw the last
// new node ready, and IdleTimeout, often hours, would buy hours. A node
// billed per minute whose job ended inside its minimum, the growth met
// inside it too, is kept as long at least (past the minimum's last safe
// moment when that comes first).
const growthNotice = 5 * time.Minute

// noteGrowth records an Apply that changed fleet f's Nodes from old to
// f.Spec.Nodes (see above). m.mu held.
func (m *Manager) noteGrowth(f *FleetRecord, old int, now time.Time) {
	switch {
	case f.Spec.Nodes > old:
		if !f.growing() {
			f.GrowFrom = old // a raise while growing goes on from the same size
		}
		f.GrowApplied, f.GrowMet = now, time.Time{}
	case f.Spec.Nodes < old && f.growing() && f.Spec.Nodes <= f.GrowFrom:
		f.GrowMet = f.GrowApplied // the caller wants no more than before: given up
	case f.Spec.Nodes < old && f.growing():
		// Fewer than asked for, still more than before: the growth goes on,
		// met when as many members are ready as the new Nodes.
		return
	default:
		return
	}
	m.dirtyF[f.Spec.Name] = true
}

// growing reports whether an Apply that raised f's Nodes waits for its
// members (FleetRecord.GrowApplied).
func (f *FleetRecord) growing() bool { return !f.GrowApplied.IsZero() && f.GrowMet.IsZero() }

// settleGrowth settles the growths that are met or given up (see above).
// Before the idle release in each pass. m.mu held.
func (m *Manager) settleGrowth(now time.Time) {
	for name, f := range m.fleets {
		if !f.growing() {
			continue
		}
		switch {
		case f.Deleting || f.Stalled || !now.Before(m.growthGiveUp(f)):
			f.GrowMet = f.GrowApplied
		case m.runnableCount(name) >= f.Spec.Nodes:
			f.GrowMet = now
		default:
			continue
		}
		m.dirtyF[name] = true
	}
}

// growthGiveUp is when a growth of f still short of members is given up:
// growthWait after the Apply. m.mu held.
func (m *Manager) growthGiveUp(f *FleetRecord) time.Time {
	return f.GrowApplied.Add(m.growthWait(f))
}

// growthWait is how long a member of fleet f may take to be ready:
// Policy.ProvisionTimeout (BareMetalProvisionTimeout, an offer's own, the
// longest among f's members) plus AgentTimeout. m.mu held.
func (m *Manager) growthWait(f *FleetRecord) time.Duration {
	d := m.pol.ProvisionTimeout
	for _, r := range m.byFleet[f.Spec.Name] {
		if isMember(r) && r.Instance.Offer.InstanceType != "" {
			d = max(d, m.provisionTimeout(r.Instance.Offer))
		}
	}
	return d + m.pol.AgentTimeout
}

// runnableCount is how many members of fleet can run a job now
// (runnable: ready, busy or idle). m.mu held.
func (m *Manager) runnableCount(fleet string) int {
	n := 0
	for _, r := range m.byFleet[fleet] {
		if isMember(r) && m.runnable(r) {
			n++
		}
	}
	return n
}

// idleAtGrowth reports whether r was idle when an Apply last raised its
// fleet f's Nodes (its idle clock began no later). m.mu held.
func idleAtGrowth(r *InstanceRecord, f *FleetRecord) bool {
	return f != nil && !f.GrowApplied.IsZero() && !r.IdleSince.After(f.GrowApplied)
}

// idleFrom is when r's idle clock starts for its idle release: when it
// went idle (InstanceRecord.IdleSince), or, for a node idle at an Apply
// that raised its fleet's Nodes, when that growth was settled (see above).
// m.mu held.
func (m *Manager) idleFrom(r *InstanceRecord) time.Time {
	if f := m.fleets[r.Instance.Fleet]; idleAtGrowth(r, f) && !f.growing() {
		return maxTime(r.IdleSince, f.GrowMet)
	}
	return r.IdleSince
}
