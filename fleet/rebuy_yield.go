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

// yieldTo is to which refused fleet an idle node's re-buy hold yields,
// and why, in words.
type yieldTo struct {
	fleet, why string
}

// yieldHolds ends the re-buy hold of idle nodes that keep the stock another
// fleet of this Manager is refused for. Each fleet short of members that
// was refused some offers as sold out (noteSoldOut) gets, across all those
// offers, as many of the nodes kept on them (keep, hold; see held) as it
// lacks, less the nodes that yielded to it already: a fleet refused two
// offers it matches lacks its nodes once, not once per offer. A node never
// yields to its own fleet (its idle nodes are its members already). Only
// nodes the idle release may take yield (idleReleasable; of a fleet, no
// more than its nodes above its MinNodes): a node its fleet's MinNodes or
// an IdleTimeout of 0 keeps is no hold, and counting it would leave the
// refused fleet waiting for a release that never comes. Nodes
// past their minimum go first: releaseIdle releases them at once; the
// other ones go at their minimum's end (paid anyway, and not released
// unforced before it). A node released for a fleet counts against it until
// that fleet is no longer short (a create of it accepted, not merely
// under way; or shrunk) or is deleted, however
// long its wait for the stock takes (see yieldGone), so that no second
// node is released for the same need. The nodes that yield are in
// m.yielded, with to whom and why. m.mu held.
func (m *Manager) yieldHolds(keep map[*InstanceRecord]bool, hold map[*InstanceRecord]time.Duration, now time.Time) {
	m.yielded = nil
	lacks := func(name string) int {
		f := m.fleets[name]
		if f == nil || f.Deleting {
			return 0
		}
		return f.Spec.Nodes - m.memberCount(name)
	}
	need := map[string]int{} // refused fleet → members it lacks, less the nodes yielded to it
	for name, rs := range m.yields {
		if f := m.fleets[name]; f == nil || f.Deleting || f.Spec.Nodes <= m.createdCount(name) {
			// Served (a create accepted; a pending one may still be
			// refused as sold out), shrunk or deleted.
			delete(m.yields, name)
			continue
		}
		need[name] = lacks(name) - len(rs)
	}
	refused := map[string][]string{} // offer key → the fleets refused it that still need nodes, by name
	for key, fleets := range m.soldOut {
		for name, until := range fleets {
			f := m.fleets[name]
			if !now.Before(until) || f == nil || f.Deleting {
				delete(fleets, name)
				continue
			}
			if _, ok := need[name]; !ok {
				need[name] = lacks(name)
			}
			if need[name] > 0 {
				refused[key] = append(refused[key], name)
			}
		}
		if len(fleets) == 0 {
			delete(m.soldOut, key)
		}
		slices.Sort(refused[key])
	}
	if len(refused) == 0 {
		return
	}
	var kept []*InstanceRecord
	spare := map[string]int{} // fleet → how many of its idle nodes releaseIdle may take (Nodes less MinNodes)
	for r := range keep {
		if len(refused[r.Instance.Offer.Key()]) > 0 && m.idleReleasable(r) {
			kept = append(kept, r)
			f := m.fleets[r.Instance.Fleet]
			spare[f.Spec.Name] = f.Spec.Nodes - f.Spec.MinNodes
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
		if spare[r.Instance.Fleet] <= 0 {
			continue // the rest of its fleet's idle nodes are kept by its MinNodes
		}
		for _, to := range refused[r.Instance.Offer.Key()] {
			if to == r.Instance.Fleet || need[to] <= 0 {
				continue
			}
			need[to]--
			spare[r.Instance.Fleet]--
			delete(keep, r)
			delete(hold, r)
			if m.yielded == nil {
				m.yielded = map[*InstanceRecord]yieldTo{}
			}
			m.yielded[r] = yieldTo{fleet: to, why: fmt.Sprintf("idle; its re-buy hold yields to fleet %s, refused %s as sold out", to, r.Instance.Offer)}
			break
		}
	}
}

// createdCount is how many members of fleet the provider accepted the
// create of (their records have an instance id). m.mu held.
func (m *Manager) createdCount(fleet string) int {
	n := 0
	for _, r := range m.byFleet[fleet] {
		if isMember(r) && r.Instance.ID != "" {
			n++
		}
	}
	return n
}

// yieldRelease releases r, an idle node whose re-buy hold yielded to a
// refused fleet (see yieldHolds), saying so, and counts it against that
// fleet. m.mu held.
func (m *Manager) yieldRelease(r *InstanceRecord, y yieldTo, policy ReleasePolicy, now time.Time) {
	at := m.requestRelease(r, "idle", policy, now, false)
	inst := &r.Instance
	m.event(Event{Type: EventReleaseRequested, Fleet: inst.Fleet, Provider: inst.Provider, InstanceID: idOf(r), Message: y.why, At: at})
	if m.yields == nil {
		m.yields = map[string][]*InstanceRecord{}
	}
	m.yields[y.fleet] = append(m.yields[y.fleet], r)
}

// yieldGone is told that r is confirmed gone. When r was released because
// a hold yielded to a fleet still waiting for its stock, the stock is back:
// r's provider's offers are looked up afresh (the cached catalog, up to
// its TTL old, still lists the offer sold out), the waiting fleet no
// longer skips r's offer as sold out, and its next try is due at once, not
// after its backoff. m.mu held.
func (m *Manager) yieldGone(r *InstanceRecord, now time.Time) {
	for to, rs := range m.yields {
		if !slices.Contains(rs, r) {
			continue
		}
		m.catalog.invalidate(r.Instance.Provider)
		m.offersGen++
		m.offersAt = time.Time{}
		k := to + "|" + r.Instance.Offer.Key()
		if a, ok := m.avoid[k]; ok && a.why == refusalReason(ErrNoCapacity) {
			delete(m.avoid, k)
		}
		if now.Before(m.fleetRetry[to]) {
			m.fleetRetry[to] = now
		}
		return
	}
}
