package fleet

import (
	"slices"
	"sort"
	"time"
)

// lateCreateWindow is how long after a create of an offer with
// LabelAfterCreate was given up (CreateUnresolved) a new unlabelled
// instance of its type may still be taken for it: a provision the API
// finished after the client's deadline and the lookup grace.
const lateCreateWindow = time.Hour

// pairUnlabelled finds, in a listing, the instances that creates of offers
// with LabelAfterCreate (Hot Aisle VMs: the label is a second call) made
// but could not label: uncertain creates still looked up, and creates given
// up within lateCreateWindow. An instance is a candidate when it is
// unlabelled, of the creates' type, held by no record, and was not listed
// unlabelled before the call of at least one of them (UnlabelledBefore):
// one of them can have made it. An instance that a create of its type still
// under way may have made (not listed unlabelled before that create's call)
// is not taken: it may list unlabelled before that create's answer names
// it. Per type, when
// there are no more candidates than such creates, each candidate is given
// to the oldest create it can belong to; more candidates than creates means
// some are not the Manager's, and none is taken (they are reported as
// unlabelled). Uncertain creates are served before given-up ones. Taking fewer instances than creates is the common case: a
// create that failed before committing made none. The pairs are put in
// o.found (uncertain creates, by request id) and o.given (given-up creates,
// by instance id). m.mu held.
func (m *Manager) pairUnlabelled(provider string, o *observation, now time.Time) {
	creates := map[string][]*InstanceRecord{} // instance type → creates, oldest first
	known, underWay := map[string]bool{}, map[string][]*InstanceRecord{}
	for _, r := range m.insts {
		i := r.Instance
		if i.Provider != provider {
			continue
		}
		switch {
		case i.ID != "":
			known[i.ID] = true
		case i.Offer.LabelAfterCreate && m.busy("create/"+i.RequestID):
			underWay[i.Offer.InstanceType] = append(underWay[i.Offer.InstanceType], r)
		case i.Offer.LabelAfterCreate && m.awaitsUnlabelled(r, o.from):
			creates[i.Offer.InstanceType] = append(creates[i.Offer.InstanceType], r)
		}
	}
	// An instance a create under way may have made (it was not listed
	// unlabelled before that create's call) waits for that create's answer.
	mayBeUnderWay := func(i Instance) bool {
		return slices.ContainsFunc(underWay[i.Offer.InstanceType],
			func(r *InstanceRecord) bool { return !slices.Contains(r.UnlabelledBefore, i.ID) })
	}
	if len(creates) == 0 {
		return
	}
	found := map[string][]string{}
	for _, i := range o.list {
		if i.RequestID == "" && i.Owner == "" && !known[i.ID] && !mayBeUnderWay(i) && slices.ContainsFunc(creates[i.Offer.InstanceType],
			func(r *InstanceRecord) bool { return !slices.Contains(r.UnlabelledBefore, i.ID) }) {
			found[i.Offer.InstanceType] = append(found[i.Offer.InstanceType], i.ID)
		}
	}
	o.found, o.given = map[string]Instance{}, map[string]*InstanceRecord{}
	for typ, rs := range creates {
		ids := found[typ]
		if len(ids) == 0 || len(ids) > len(rs) {
			continue
		}
		sortRecords(rs)
		// Uncertain creates first: a given-up create's instance landing late
		// is the rarer case, and one of another fleet may be waiting for it.
		sort.SliceStable(rs, func(a, b int) bool { return rs[a].CreateUncertain && !rs[b].CreateUncertain })
		sort.Strings(ids)
		taken := make([]bool, len(rs))
		for _, id := range ids {
			for k, r := range rs {
				if taken[k] || slices.Contains(r.UnlabelledBefore, id) {
					continue
				}
				taken[k] = true
				if r.CreateUncertain {
					o.found[r.Instance.RequestID] = o.byID[id]
				} else {
					o.given[id] = r
				}
				break
			}
		}
	}
}

// awaitsUnlabelled reports whether a create without an instance may still
// be matched with an unlabelled one listed by a listing started at from:
// uncertain and not under way, or given up (its uncertainty unresolved)
// and the listing may show what landed within lateCreateWindow (see
// lateListingTakes). m.mu held.
func (m *Manager) awaitsUnlabelled(r *InstanceRecord, from time.Time) bool {
	if r.CreateUncertain {
		return !m.busy("create/" + r.Instance.RequestID)
	}
	return m.lateListingTakes(r, from)
}

// mayBeACreates reports whether an unlabelled instance listed on provider
// may still be the result of one of this Manager's creates of its type (one
// under way, uncertain, or given up within lateCreateWindow, whose call came
// before it was first listed unlabelled), for a listing started at from: it
// is then not reported as somebody else's yet. m.mu held.
func (m *Manager) mayBeACreates(provider string, i Instance, from time.Time) bool {
	for _, r := range m.insts {
		ri := r.Instance
		if ri.Provider != provider || ri.ID != "" || !ri.Offer.LabelAfterCreate || ri.Offer.InstanceType != i.Offer.InstanceType ||
			slices.Contains(r.UnlabelledBefore, i.ID) {
			continue
		}
		if m.busy("create/"+ri.RequestID) || m.awaitsUnlabelled(r, from) {
			return true
		}
	}
	return false
}

// lateCreateEnd is when the lateCreateWindow of r, a create given up
// (EventCreateUnresolved), ends: the give-up plus lateCreateWindow. Zero
// for any other record.
func lateCreateEnd(r *InstanceRecord) time.Time {
	h := r.Instance.History
	if r.Instance.ID != "" || r.Instance.Status != StatusTerminated || r.CreateUncertainSince.IsZero() || len(h) == 0 {
		return time.Time{}
	}
	return h[len(h)-1].Time.Add(lateCreateWindow)
}

// lateListingTakes reports whether a listing started at from may take an
// unlabelled instance for r, a create given up: it started by the end of
// r's lateCreateWindow, or up to Policy.VisibilityGrace after it (the
// listing at the window's end, lateCreateCheck, starts a pass late; and a
// server that landed just before the end can be missing from lists that
// long). m.mu held.
func (m *Manager) lateListingTakes(r *InstanceRecord, from time.Time) bool {
	end := lateCreateEnd(r)
	return !end.IsZero() && !from.After(end.Add(m.pol.VisibilityGrace))
}

// lateCreateOpen reports whether r, a create given up, still waits for a
// listing of its provider and kind: its lateCreateWindow is open, or no
// listing started at its end or later has covered it yet (a crash, an
// outage, a refused listing at the end). Its instance may land until the
// window ends, labelled or not; only such a listing shows it. m.mu held.
func (m *Manager) lateCreateOpen(r *InstanceRecord) bool {
	end := lateCreateEnd(r)
	return !end.IsZero() && m.listedFrom[r.Instance.RequestID].Before(end)
}

// lateCreateCheck is when r, a create given up, next needs a listing of its
// provider and kind (zero: none): every Policy.DriftCheckInterval while its
// lateCreateWindow is open and once at its end, so that an instance landing
// in the window's last minutes is found before the window closes (and
// before its deleted fleet is forgotten), also by a Manager that has
// nothing else to watch. Six or seven listings per create given up at the
// default interval. m.mu held.
func (m *Manager) lateCreateCheck(r *InstanceRecord, seen time.Time) time.Time {
	if !m.lateCreateOpen(r) {
		return time.Time{}
	}
	end := lateCreateEnd(r)
	if at := seen.Add(m.pol.DriftCheckInterval); at.Before(end) {
		return at
	}
	return end
}
