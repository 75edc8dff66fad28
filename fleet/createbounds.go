package fleet

import (
	"slices"
	"time"
)

// noteMisses records, for every create of provider whose instance is not
// known yet (its call under way or uncertain, or given up within
// lateCreateWindow) and whose kind the listing o covered, that o showed
// nothing that could be its instance: neither its label nor, for an offer
// with LabelAfterCreate, an unlabelled instance of its type that no record
// holds and that was not listed before its call. The instance, if any, was
// then made after o started less Policy.VisibilityGrace (see
// earliestStart). m.mu held.
func (m *Manager) noteMisses(provider string, o *observation, kinds kindSet, now time.Time) {
	known := map[string]bool{}
	for _, r := range m.insts {
		if r.Instance.Provider == provider && r.Instance.ID != "" {
			known[r.Instance.ID] = true
		}
	}
	for id, r := range m.insts {
		i := r.Instance
		if i.Provider != provider || i.ID != "" || !kinds.covers(i.Offer) || !(r.CreateUncertain || m.lateListingTakes(r, o.from)) {
			continue
		}
		if _, ok := o.byReq[id]; ok || (i.Offer.LabelAfterCreate && slices.ContainsFunc(o.list, func(x Instance) bool {
			return x.RequestID == "" && x.Owner == "" && x.Offer.InstanceType == i.Offer.InstanceType && !known[x.ID] &&
				!slices.Contains(r.UnlabelledBefore, x.ID)
		})) {
			continue
		}
		m.createMissed[id] = maxTime(m.createMissed[id], o.from)
	}
}

// earliestStart is the earliest moment the instance that r's create made
// can have started, for an instance found by a listing after its create's
// answer was lost or ambiguous (r.CreatedLatest set: the provider gives no
// start): the later of the plan (Instance.Created so far, before the call)
// and the start of the last listing that showed nothing that could be it
// less Policy.VisibilityGrace (a new server may be missing from lists that
// long), never after CreatedLatest. m.mu held.
func (m *Manager) earliestStart(r *InstanceRecord) time.Time {
	from := r.Instance.Created
	if missed, ok := m.createMissed[r.Instance.RequestID]; ok {
		from = maxTime(from, missed.Add(-m.pol.VisibilityGrace))
	}
	if from.IsZero() || from.After(r.CreatedLatest) {
		return r.CreatedLatest
	}
	return from
}

// startUnsure reports whether r's start is not known to the minute: unknown
// (CreatedUnknown: adopted from a list that gives none) or only bounded
// (CreatedLatest set: found after an uncertain create). Its release is then
// not forced before the latest start's minimum is nearly over (see
// minimumNotOver).
func startUnsure(r *InstanceRecord) bool { return r.CreatedUnknown || !r.CreatedLatest.IsZero() }

// latestStart is the latest moment r's reservation can have begun: its
// CreatedLatest when only bounded, else Instance.Created.
func latestStart(r *InstanceRecord) time.Time {
	if !r.CreatedLatest.IsZero() {
		return r.CreatedLatest
	}
	return r.Instance.Created
}

// foundLate takes seen, found by a listing at now, as the instance of r's
// create, whose answer was lost or ambiguous (uncertain) or which was given
// up: when the provider gives no start (Hot Aisle), the start is bounded by
// earliestStart and now (CreatedLatest). m.mu held.
func (m *Manager) foundLate(r *InstanceRecord, seen Instance, now time.Time) {
	if seen.Created.IsZero() {
		r.CreatedLatest = now
	}
	m.createResult(r.Instance.RequestID, seen, r.Instance.VPCID, nil, now)
	if r.Instance.ID == "" {
		r.CreatedLatest = time.Time{} // not taken (another create holds it): still looked up
	}
}
