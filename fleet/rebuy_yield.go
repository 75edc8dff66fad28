package fleet

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// noteSoldOut records that fleet was refused offer o as sold out now (a
// create answered ErrNoCapacity, or the catalog lists the offers the fleet
// matches as sold out), and that the refusal counts until until: while it
// does and the fleet is short of members, the re-buy holds on o yield to it
// (see yieldHolds). m.mu held.
func (m *Manager) noteSoldOut(fleet string, o Offer, until time.Time) {
	if m.soldOut == nil {
		m.soldOut = map[string]map[string]time.Time{}
	}
	k := o.Key()
	if m.soldOut[k] == nil {
		m.soldOut[k] = map[string]time.Time{}
	}
	m.soldOut[k][fleet] = maxTime(m.soldOut[k][fleet], until)
}

// noteCatalogSoldOut records, for a fleet that no offer of the catalog can
// serve now, the offers matching req that the catalog lists as sold out
// (see noteSoldOut). m.mu held.
func (m *Manager) noteCatalogSoldOut(fleet string, req Requirements, until time.Time) {
	req.IncludeSoldOut = true
	all, _ := m.catalog.peek(req)
	for _, o := range all {
		if !o.Available {
			m.noteSoldOut(fleet, o, until)
		}
	}
}

// yieldHolds ends the re-buy hold of idle nodes that keep the stock another
// fleet of this Manager is refused for: for each offer (provider, region,
// instance type) some fleet short of members was refused as sold out
// (noteSoldOut), as many of the nodes kept on it (keep, hold; see held) as
// those fleets are short are no longer kept, each for a fleet other than
// its own (whose idle nodes are its members already). Nodes past their
// minimum go first: releaseIdle releases them at once; the other ones go
// at their minimum's end (paid anyway, and not released unforced before
// it). Nodes released for a refusal count against it while their release
// goes on and for soldOutPenalty after they are gone (the refused fleet's
// next try, and a catalog that shows the stock again). The nodes that
// yield are in m.yielded, with why. m.mu held.
func (m *Manager) yieldHolds(keep map[*InstanceRecord]bool, hold map[*InstanceRecord]time.Duration, now time.Time) {
	m.yielded = nil
	for key, fleets := range m.soldOut {
		short := map[string]int{} // refused fleet → members it lacks
		var who []string
		for name, until := range fleets {
			f := m.fleets[name]
			if !now.Before(until) || f == nil || f.Deleting {
				delete(fleets, name)
				continue
			}
			if n := f.Spec.Nodes - m.memberCount(name); n > 0 {
				short[name] = n
				who = append(who, name)
			}
		}
		if len(fleets) == 0 {
			delete(m.soldOut, key)
		}
		slices.Sort(who)
		// take gives a node of fleet to a refused fleet other than its own
		// (a fleet's own idle nodes are its members already); false when
		// none is short.
		take := func(fleet string) (string, bool) {
			for _, name := range who {
				if name != fleet && short[name] > 0 {
					short[name]--
					return name, true
				}
			}
			return "", false
		}
		var freeing []*InstanceRecord
		for _, r := range m.yields[key] {
			if m.insts[r.Instance.RequestID] != r {
				continue // pruned
			}
			if h := r.Instance.History; r.Instance.Status == StatusTerminated && (len(h) == 0 || now.Sub(h[len(h)-1].Time) >= soldOutPenalty) {
				continue
			}
			freeing = append(freeing, r)
			take(r.Instance.Fleet)
		}
		if len(freeing) == 0 {
			delete(m.yields, key)
		} else {
			m.yields[key] = freeing
		}
		if len(who) == 0 {
			continue
		}
		var kept []*InstanceRecord
		for r := range keep {
			if r.Instance.Offer.Key() == key {
				kept = append(kept, r)
			}
		}
		past := func(r *InstanceRecord) bool {
			return !now.Before(r.Instance.Created.Add(r.Instance.Offer.MinimumReservation))
		}
		slices.SortFunc(kept, func(a, b *InstanceRecord) int {
			if pa, pb := past(a), past(b); pa != pb {
				if pa {
					return -1
				}
				return 1
			}
			if x := m.paidUntil(a, now).Compare(m.paidUntil(b, now)); x != 0 {
				return x
			}
			if x := a.Instance.Created.Compare(b.Instance.Created); x != 0 {
				return x
			}
			return cmp.Compare(a.Instance.RequestID, b.Instance.RequestID)
		})
		for _, r := range kept {
			to, ok := take(r.Instance.Fleet)
			if !ok {
				continue
			}
			delete(keep, r)
			delete(hold, r)
			if m.yielded == nil {
				m.yielded = map[*InstanceRecord]string{}
			}
			m.yielded[r] = fmt.Sprintf("idle; its re-buy hold yields to fleet %s, refused %s as sold out", to, r.Instance.Offer)
		}
	}
}

// yieldRelease releases r, an idle node whose re-buy hold yielded to a
// refused fleet (see yieldHolds), saying so, and counts it against the
// refusal. m.mu held.
func (m *Manager) yieldRelease(r *InstanceRecord, why string, policy ReleasePolicy, now time.Time) {
	at := m.requestRelease(r, "idle", policy, now, false)
	inst := &r.Instance
	m.event(Event{Type: EventReleaseRequested, Fleet: inst.Fleet, Provider: inst.Provider, InstanceID: idOf(r), Message: why, At: at})
	if m.yields == nil {
		m.yields = map[string][]*InstanceRecord{}
	}
	m.yields[inst.Offer.Key()] = append(m.yields[inst.Offer.Key()], r)
}
