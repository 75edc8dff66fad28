package fleet

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// A fleet of this Manager refused a create for want of stock — its offer
// sold out, or the account's instance limit for its kind reached — waits
// for nodes that other fleets keep on that stock with no job for them:
// those give way to it (yieldHolds). Stock is named by a key: the offer's
// (Offer.Key) for a sold-out refusal, limitKey for a refusal for the
// limit.

// limitKey names the stock an account's instance limit counts for offers
// of o's kind on o's provider: Hot Aisle's team limits are one for virtual
// machines (maximum_virtual_machines) and one for bare-metal servers
// (maximum_bare_metal_servers).
func limitKey(o Offer) string {
	return "limit|" + o.Provider + "|" + kindOf(o.BareMetal).String()
}

// stockKeys names the stock an instance of o takes: its offer, and its
// provider's instance limit for its kind.
func stockKeys(o Offer) [2]string {
	return [2]string{o.Key(), limitKey(o)}
}

// refusedWhy says in words why a fleet was refused the stock key an
// instance of o takes.
func refusedWhy(key string, o Offer) string {
	if key == limitKey(o) {
		return fmt.Sprintf("refused a create on %s for the account's instance limit on %s (quota exceeded)", o.Provider, kindOf(o.BareMetal))
	}
	return fmt.Sprintf("refused %s as sold out", o)
}

// noteRefused records that fleet was refused the stock named key. The
// refusal lasts, whatever time passes, until a create of the fleet is
// accepted (refusalServed), the fleet is no longer short of members, or it
// is deleted; it counts (the nodes that keep that stock with no job for
// them give way to the fleet, see yieldHolds) in each pass where the
// fleet, short and not stalled, still matches that stock and has no offer
// to create on but ones it was refused (needsStock). It is not timed:
// a refusal that lasted as long as the offer's skip (soldOutPenalty)
// lapsed between the skip's end and the fleet's next try (1 to 10 min
// later, its backoff), while the fleet was as short as before. Once the
// skip is over with the offer listed available again, a node that would
// give way for it makes the fleet try first (recheckStale). m.mu held.
func (m *Manager) noteRefused(fleet, key string) {
	if m.refused == nil {
		m.refused = map[string]map[string]bool{}
	}
	if m.refused[key] == nil {
		m.refused[key] = map[string]bool{}
	}
	m.refused[key][fleet] = true
}

// noteSoldOut records that fleet was refused offer o as sold out (a create
// answered ErrNoCapacity, or the catalog lists the offers the fleet
// matches as sold out; see noteRefused). m.mu held.
func (m *Manager) noteSoldOut(fleet string, o Offer) {
	m.noteRefused(fleet, o.Key())
}

// noteCreateSoldOut records that a create of o for fleet was answered sold
// out (ErrNoCapacity) now — as a need other fleets' nodes give way to
// only when the fleet has no other offer to create on now: none of the
// offers it matches is listed available and not skipped (withoutAvoided:
// not refused lately, its provider's creates not held). A fleet with
// another offer open is not short of stock: its next create takes that
// offer at once, and no node of another fleet is released for it. When
// its last open offer is refused, the refusal counts for every offer it
// matches that is sold out: refused as such by a create (its skip not
// ended) or listed so by the catalog. m.mu held.
func (m *Manager) noteCreateSoldOut(fleet string, o Offer, now time.Time) {
	f := m.fleets[fleet]
	if f == nil || f.Deleting {
		return
	}
	req := m.offerReq(f)
	offers, _ := m.catalog.peek(req)
	if len(m.withoutAvoided(fleet, offers, now)) > 0 {
		return // another offer is open to it: tried next, at once
	}
	m.noteSoldOut(fleet, o)
	m.noteNoStock(fleet, req, now)
}

// offerReq is what a create of fleet f asks of the catalog: its
// requirements, and for a cluster fleet, only where it lives (its
// anchor's provider and region, see anchor). m.mu held.
func (m *Manager) offerReq(f *FleetRecord) Requirements {
	req := f.Spec.Requirements
	if f.Spec.Placement == PlacementCluster {
		req.Cluster = true
		if a := m.anchor(f); a != nil {
			req.Providers, req.Regions = []string{a.Provider}, []string{a.Region}
		}
	}
	return req
}

// refusalServed is told that a create of fleet was accepted: its
// refusals (sold out, instance limit) end. They counted for the need they
// were answered to; a later shortfall of the fleet (a growth applied
// after) counts only after a new refusal, and no node gives way to it
// before. The nodes that gave way to it already stay counted against it
// (m.yields) while it is short, but for one whose stock this create took
// (yieldTaken). m.mu held.
func (m *Manager) refusalServed(fleet string) {
	for key, fleets := range m.refused {
		delete(fleets, fleet)
		if len(fleets) == 0 {
			delete(m.refused, key)
		}
	}
}

// yieldTaken is told that a create of r's fleet was accepted: of the
// nodes that gave way to that fleet (m.yields), one whose stock the create
// took stops counting against its need — one whose release the provider
// accepted or that is confirmed gone (its stock freed), of the stock r's
// offer takes (that offer, or for the instance limit any offer of its
// provider and kind), gone first, then the earliest released. Without it
// a fleet served by the stock one node freed would still count that node
// against the nodes it lacks after, and no node would give way to it for
// them. A create on other stock takes none: the nodes that gave way still
// free stock for the fleet's next one. m.mu held.
func (m *Manager) yieldTaken(r *InstanceRecord) {
	rs := m.yields[r.Instance.Fleet]
	keys := stockKeys(r.Instance.Offer)
	var pick *InstanceRecord
	freed := func(g *InstanceRecord) (bool, time.Time) {
		if g.Instance.Status == StatusTerminated {
			return true, time.Time{}
		}
		if t := g.Termination; t != nil && !t.Accepted.IsZero() {
			return true, t.Accepted
		}
		return false, time.Time{}
	}
	for g, y := range rs {
		k := stockKeys(g.Instance.Offer)
		if ok, _ := freed(g); !ok || y.limit && k[1] != keys[1] || !y.limit && k[0] != keys[0] {
			continue
		}
		if pick == nil {
			pick = g
			continue
		}
		_, a := freed(g)
		_, b := freed(pick)
		if x := a.Compare(b); x < 0 || x == 0 && g.Instance.RequestID < pick.Instance.RequestID {
			pick = g
		}
	}
	if pick == nil {
		return
	}
	delete(rs, pick)
	if len(rs) == 0 {
		delete(m.yields, r.Instance.Fleet)
	}
}

// noteLimitRefused records that a create of o for fleet was refused for
// the account's instance limit (ErrQuotaExceeded: Hot Aisle's 401 "Maximum
// VMs already provisioned for this team", 403 "tenant limit exceeded"; see
// noteRefused): any node of o's provider and kind frees a place under it.
// m.mu held.
func (m *Manager) noteLimitRefused(fleet string, o Offer) {
	m.noteRefused(fleet, limitKey(o))
}

// noteLimitHeld records, for a fleet with no offer to create on now,
// a refusal for the account's instance limit (noteLimitRefused) of each
// offer it matches that only its kind's limit hold keeps it from trying
// (holdKind: a create of another fleet, or its own, was refused for the
// limit; 10 minutes to an hour): its create would have been refused as
// that one was, and without the record no node would give way to it
// (needsStock) — it would wait for the hold's end, be refused then, and
// only then count. Not an offer skipped for another reason too (refused
// lately, its provider's creates held after a refusal of the account:
// 401, 402; its kind's listing refused): those hold whatever stock is
// freed. m.mu held.
func (m *Manager) noteLimitHeld(fleet string, matched []Offer, now time.Time) {
	for _, o := range matched {
		if _, ok := m.providers[o.Provider]; !ok || m.avoided(fleet, o, now) || m.accountHeld(o, now) {
			continue
		}
		if now.Before(m.kindHold[kindKey(o.Provider, o.BareMetal)]) {
			m.noteLimitRefused(fleet, o)
		}
	}
}

// noteNoStock records, for a fleet with no offer to create on now (none
// of the offers matching req is listed available and not skipped), the
// ones that are sold out: skipped as refused sold out by a create (the
// skip not ended) or listed so by the catalog (see noteSoldOut). A try
// that finds every offer skipped records them again: a need is not lost
// because the refusal that began it was not recorded (another offer was
// open then). m.mu held.
func (m *Manager) noteNoStock(fleet string, req Requirements, now time.Time) {
	req.IncludeSoldOut = true
	all, _ := m.catalog.peek(req)
	for _, o := range all {
		if a := m.avoid[fleet+"|"+o.Key()]; !o.Available || a.why == refusalReason(ErrNoCapacity) && now.Before(a.until) {
			m.noteSoldOut(fleet, o)
		}
	}
}

// needsStock names, of keys (the stock fleet f was refused, see
// noteRefused), the ones f waits for now: those an offer f matches takes
// (sold out or not, from the cached catalog; see stockKeys), when f is
// not stalled and has no offer to create on but ones it was refused —
// every offer it matches that is listed available and not skipped
// (withoutAvoided) takes stock named in keys. None when f has another
// offer open: its next create takes that one. Nor the stock of an offer
// whose creates the account holds (accountHeld: its provider's creates
// held after a refusal of the account, its kind's listing refused): no
// create of it can use stock freed before that hold ends, and a node
// released for it would be lost to its own fleet for nothing. An offer
// refused as sold out whose skip is over while the catalog lists it
// available again (not for a refusal for its kind's instance limit, which
// no listing shows) may have stock back: then none either, and stale names
// those offers — the fleet's next create is tried before anything gives
// way (recheckStale); refused again, its new refusal counts at once, and
// an offer listed sold out counts as long as it is. m.mu held.
func (m *Manager) needsStock(f *FleetRecord, keys map[string]bool, now time.Time) (waits, stale []string) {
	if f.Stalled {
		return nil, nil // no creates until applied again
	}
	req := m.offerReq(f)
	req.IncludeSoldOut = true
	all, _ := m.catalog.peek(req)
	var open []Offer
	for _, o := range all {
		if o.Available {
			open = append(open, o)
		}
	}
	for _, o := range m.withoutAvoided(f.Spec.Name, open, now) {
		k := stockKeys(o)
		switch {
		case keys[k[1]]: // refused for its kind's instance limit: the listing says nothing of it
		case keys[k[0]]:
			stale = append(stale, k[0]) // refused as sold out, its skip over, listed available again
		default:
			return nil, nil // another offer is open to it
		}
	}
	if len(stale) > 0 {
		return nil, stale // its next create may be served: tried first (see recheckStale)
	}
	var out []string
	for _, o := range all {
		if m.accountHeld(o, now) {
			continue // no create of it until the account's hold ends, whatever stock is freed
		}
		for _, k := range stockKeys(o) {
			if keys[k] && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// idleMember reports whether fleet has a member Acquire could hand out
// now — ready (runnable), no job on it (not busy, not handed out, no job
// ended by a stop waiting for its holder's give-back) — that ran a job
// ended since the fleet's Nodes were last raised (FleetRecord.GrowApplied;
// since ever, for a fleet never raised). Such a fleet has no work waiting
// for more nodes — its next job would take that member — and no node gives
// way to it however short of its Nodes it is: a raise of Nodes over the
// stock that no idle release brings down (one inside a long minimum)
// would otherwise draw other fleets' held spares for work long done. A
// member that never ran a job since the raise (new, ready before its
// siblings; idle when Nodes was raised) does not count: the raise asked
// for the fleet's nodes together, whatever is idle. m.mu held.
func (m *Manager) idleMember(fleet string) bool {
	f := m.fleets[fleet]
	if f == nil {
		return false
	}
	for _, r := range m.byFleet[fleet] {
		id := r.Instance.RequestID
		if !isMember(r) || !m.runnable(r) || heldByJob(r) || m.acquired[id] || m.picking[id] > 0 {
			continue
		}
		if !r.BusySince.IsZero() && !r.BusySince.After(r.IdleSince) && r.IdleSince.After(f.GrowApplied) {
			return true // its job ended since the raise, and nothing took it since
		}
	}
	return false
}

// accountHeld reports whether no create of o can be made now for a
// reason of the account, not of stock: its provider's creates are held
// after a refusal of the account (holdProvider: a key or permission
// refused, 401, 402 balance; 10 minutes to an hour), or its kind's listing
// is refused (listRefused). The hold of o's kind after a refusal for the
// instance limit (holdKind) is not such a hold: stock freed under that
// limit lifts it (yieldGone). m.mu held.
func (m *Manager) accountHeld(o Offer, now time.Time) bool {
	return now.Before(m.providerHold[o.Provider]) || m.listRefused[o.Provider].covers(o)
}

// recheckStale is told, for each fleet still in need, the offers it was
// refused as sold out that the catalog lists available again with the
// fleet's skip of them over (stale; see needsStock): the stock may be
// back, and nothing gives way for it on the word of a refusal that old.
// When a node would give way to the fleet for such an offer's stock (one
// on that offer kept with no job for it: idle and releasable, or a release
// waiting for its minimum's end, of another fleet), the fleet's next
// create is tried now instead of after its backoff, and its refusal of
// that offer dropped: served, nothing gives way; refused again (Hot
// Aisle's sold out behind a listing that still shows the offer), the new
// refusal counts at once. A fleet with no such node keeps its refusal and
// tries at its backoff: nothing gives way to it meanwhile. m.mu held.
func (m *Manager) recheckStale(stale map[string][]string, keep map[*InstanceRecord]bool, now time.Time) {
	for name, offers := range stale {
		gives := func(r *InstanceRecord) bool {
			return r.Instance.Fleet != name && slices.Contains(offers, r.Instance.Offer.Key())
		}
		found := false
		for r := range keep {
			if gives(r) && m.idleReleasable(r) {
				found = true
				break
			}
		}
		for _, r := range m.insts {
			if !found && gives(r) && m.waitsForMinimum(r, now) {
				found = true
			}
		}
		if !found {
			continue
		}
		for _, k := range offers {
			delete(m.refused[k], name)
			if len(m.refused[k]) == 0 {
				delete(m.refused, k)
			}
		}
		if now.Before(m.fleetRetry[name]) {
			m.fleetRetry[name] = now
		}
	}
}

// yieldTo is to which refused fleet a node gives way, why in words, and
// whether for the account's instance limit (else for a sold-out offer).
type yieldTo struct {
	fleet, why string
	limit      bool
}

// yieldHolds picks the nodes that give way to another fleet of this
// Manager refused the stock they keep (noteRefused: their offer sold out,
// or their provider's instance limit for their kind reached) — nodes kept
// with no job for them:
//
//   - releases waiting only for their minimum's end with no job on them
//     (waitsForMinimum, whatever decided them: a deleted or shrunk fleet's
//     nodes, idle ones, ones its caller released, a node stopped out of
//     band and not replaced, an unhealthy agent's, one not wanted; paid
//     anyway): released at once with force, which costs nothing more (the
//     minimum is charged whole either way);
//   - idle nodes held by the re-buy hold (keep, hold; see held) that the
//     idle release may take (idleReleasable; of a fleet, no more than its
//     nodes above its MinNodes: a node its fleet's MinNodes or an
//     IdleTimeout of 0 keeps is no hold, and counting it would leave the
//     refused fleet waiting for a release that never comes): those past
//     their minimum are released at once by releaseIdle, the other ones at
//     their minimum's end (paid anyway, and not released unforced before
//     it).
//
// in that order (the waiting releases cost nothing and end nobody's hold;
// not one its own fleet's growth takes back in this pass, growthReclaims),
// then the least paid time left first. Each fleet short of members that
// was refused some stock gets, across all of it, as many of those nodes as
// it lacks, less the nodes that gave way to it already: a fleet refused
// two offers it matches lacks its nodes once, not once per offer. No node
// gives way to a fleet with a member idle since its job ended (idleMember:
// no work waits for more of it), nor for stock whose creates the account
// holds (see needsStock). A node never gives way to its own fleet (its
// idle nodes are its members already). A node that gave way to a fleet
// counts against it until a create of that fleet takes the stock it freed
// (yieldTaken: accepted on that stock once the node's release was
// accepted), the fleet is no longer short (its creates accepted, not
// merely under way; or shrunk) or is deleted, however long its wait for
// the stock takes (see yieldGone), so that no second node is released for
// the same need, and a node the fleet still lacks once that stock is taken
// draws one more.
// A refusal lasts until a create of its fleet is accepted (refusalServed),
// the fleet is no longer short (a create under way counts) or is deleted,
// and counts in the passes where its fleet still waits for that stock
// (needsStock), however long after the refusal. The nodes that give way
// are in m.yielded, with to whom and why. m.mu held.
func (m *Manager) yieldHolds(keep map[*InstanceRecord]bool, hold map[*InstanceRecord]time.Duration, now time.Time) {
	m.yielded = nil
	lacks := func(name string) int {
		f := m.fleets[name]
		if f == nil || f.Deleting {
			return 0
		}
		return f.Spec.Nodes - m.memberCount(name)
	}
	need := map[string]int{} // refused fleet → members it lacks, less the nodes that gave way to it
	for name, rs := range m.yields {
		if f := m.fleets[name]; f == nil || f.Deleting || f.Spec.Nodes <= m.createdCount(name) {
			// Served (a create accepted; a pending one may still be
			// refused), shrunk or deleted.
			delete(m.yields, name)
			continue
		}
		need[name] = lacks(name) - len(rs)
	}
	keys := map[string]map[string]bool{} // refused fleet → the stock keys it was refused
	for key, fleets := range m.refused {
		for name := range fleets {
			if lacks(name) <= 0 { // deleted, or no longer short (a create under way counts)
				delete(fleets, name)
				continue
			}
			if keys[name] == nil {
				keys[name] = map[string]bool{}
			}
			keys[name][key] = true
		}
		if len(fleets) == 0 {
			delete(m.refused, key)
		}
	}
	refused := map[string][]string{} // stock key → the fleets refused it that still need nodes, by name
	stale := map[string][]string{}   // refused fleet → the offers it was refused listed available again, their skips over
	for name, ks := range keys {
		if m.idleMember(name) {
			continue // no work waits for more of it: its own idle node would take a job first
		}
		waits, st := m.needsStock(m.fleets[name], ks, now)
		if len(waits) == 0 && len(st) == 0 {
			continue
		}
		if _, ok := need[name]; !ok {
			need[name] = lacks(name)
		}
		if need[name] <= 0 {
			continue
		}
		if len(st) > 0 {
			stale[name] = st
		}
		for _, key := range waits {
			refused[key] = append(refused[key], name)
		}
	}
	m.recheckStale(stale, keep, now)
	if len(refused) == 0 {
		return
	}
	for _, names := range refused {
		slices.Sort(names)
	}
	wanted := func(r *InstanceRecord) bool {
		for _, k := range stockKeys(r.Instance.Offer) {
			if len(refused[k]) > 0 {
				return true
			}
		}
		return false
	}
	var cands []*InstanceRecord
	spare := map[string]int{} // fleet → how many of its idle nodes releaseIdle may take (Nodes less MinNodes)
	for r := range keep {
		if wanted(r) && m.idleReleasable(r) {
			cands = append(cands, r)
			f := m.fleets[r.Instance.Fleet]
			spare[f.Spec.Name] = f.Spec.Nodes - f.Spec.MinNodes
		}
	}
	reclaimed := m.growthReclaims(now) // taken back by its own fleet's growth in this pass: kept
	for _, r := range m.insts {
		if m.waitsForMinimum(r, now) && wanted(r) && !reclaimed[r] {
			cands = append(cands, r)
		}
	}
	rank := func(r *InstanceRecord) int {
		switch {
		case r.Termination != nil:
			return 0 // released anyway: giving way costs nothing
		case !now.Before(r.Instance.Created.Add(r.Instance.Offer.MinimumReservation)):
			return 1 // past its minimum: released at once
		}
		return 2 // inside its minimum: released at its end
	}
	slices.SortFunc(cands, func(a, b *InstanceRecord) int {
		if x := cmp.Compare(rank(a), rank(b)); x != 0 {
			return x
		}
		if x := m.paidUntil(a, now).Compare(m.paidUntil(b, now)); x != 0 {
			return x
		}
		if x := a.Instance.Created.Compare(b.Instance.Created); x != 0 {
			return x
		}
		return cmp.Compare(a.Instance.RequestID, b.Instance.RequestID)
	})
	for _, r := range cands {
		waiting := r.Termination != nil
		if !waiting && spare[r.Instance.Fleet] <= 0 {
			continue // the rest of its fleet's idle nodes are kept by its MinNodes
		}
		if y, ok := m.giveWay(r, refused, need); ok {
			if !waiting {
				spare[r.Instance.Fleet]--
				delete(keep, r)
				delete(hold, r)
				y.why = fmt.Sprintf("idle; its re-buy hold yields to fleet %s, %s", y.fleet, y.why)
			} else {
				y.why = fmt.Sprintf("%s; its release, waiting for the minimum's end (paid anyway), yields to fleet %s, %s: released now with force (the minimum is charged whole either way: nothing more is paid)",
					r.Termination.Reason, y.fleet, y.why)
			}
			if m.yielded == nil {
				m.yielded = map[*InstanceRecord]yieldTo{}
			}
			m.yielded[r] = y
		}
	}
}

// giveWay picks the refused fleet r gives way to, if any: the first, by
// name, refused r's offer and still in need, else the first refused for
// its provider's limit on its kind; never r's own fleet. It counts r
// against that fleet's need. m.mu held.
func (m *Manager) giveWay(r *InstanceRecord, refused map[string][]string, need map[string]int) (yieldTo, bool) {
	o := r.Instance.Offer
	for _, key := range stockKeys(o) {
		for _, to := range refused[key] {
			if to == r.Instance.Fleet || need[to] <= 0 {
				continue
			}
			need[to]--
			return yieldTo{fleet: to, why: refusedWhy(key, o), limit: key == limitKey(o)}, true
		}
	}
	return yieldTo{}, false
}

// waitsForMinimum reports whether r's release is decided and waits only
// for the end of its minimum reservation, paid anyway, with no job on it —
// whatever decided it (idleness, a scale-down, its fleet's deletion, its
// caller, a stop out of band not replaced, an unhealthy agent, a member
// no longer wanted): decided by the state, not by the reason. Released by
// the default policy (ReleaseAtReservationEnd: still waiting for its
// window), not attempted yet, billed per minute with a known start (a
// forced release before the minimum's end costs nothing more), not an
// orphan, and no job ran on it when its release was decided
// (Termination.Busy, which counts a job a stop out of band ended,
// JobStopped; for a release stored without it, a busy mark after its last
// idle one). m.mu held.
func (m *Manager) waitsForMinimum(r *InstanceRecord, now time.Time) bool {
	t, o := r.Termination, r.Instance.Offer
	return t != nil && !t.Busy && !r.JobStopped && !r.BusySince.After(r.IdleSince) && !r.Orphan && r.Instance.Status == StatusTerminating &&
		r.Instance.ID != "" && t.Attempts == 0 && t.Accepted.IsZero() && now.Before(t.NotBefore) &&
		o.BillingGranularity < time.Hour && o.MinimumReservation > 0 && !startUnsure(r)
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
	m.countYield(r, y)
}

// yieldWaiting releases r, whose release waited for its minimum's end and
// gives way to a refused fleet (see yieldHolds), at once with force,
// saying so, and counts it against that fleet. Not while a busy mark of
// its fleet recorded through another replica may be waiting (marksRead:
// such a mark takes the waiting release back). m.mu held.
func (m *Manager) yieldWaiting(r *InstanceRecord, y yieldTo, now time.Time) {
	if !m.waitsForMinimum(r, now) || !m.marksRead(r.Instance.Fleet, now) {
		return
	}
	t, inst := r.Termination, &r.Instance
	t.NotBefore = time.Time{}
	t.Force = now.Before(inst.Created.Add(inst.Offer.MinimumReservation))
	m.dirtyI[inst.RequestID] = true
	m.event(Event{Type: EventReleaseRequested, Fleet: inst.Fleet, Provider: inst.Provider, InstanceID: idOf(r), Message: y.why, At: now})
	m.countYield(r, y)
}

// countYield counts r, released for y.fleet, against that fleet's need
// (see yieldHolds). m.mu held.
func (m *Manager) countYield(r *InstanceRecord, y yieldTo) {
	if m.yields == nil {
		m.yields = map[string]map[*InstanceRecord]yieldTo{}
	}
	if m.yields[y.fleet] == nil {
		m.yields[y.fleet] = map[*InstanceRecord]yieldTo{}
	}
	m.yields[y.fleet][r] = y
}

// yieldGone is told that r is confirmed gone. When r was released to give
// way to a fleet still waiting for its stock, the stock is back and the
// waiting fleet's next try is due at once, not after its backoff. For a
// sold-out offer r's provider's offers are looked up afresh (the cached
// catalog, up to its TTL old, still lists the offer sold out) and the
// waiting fleet no longer skips r's offer as sold out; for the account's
// instance limit, the hold of the creates of r's kind on its provider
// that the refusal began (holdKind, 10 minutes to an hour) is lifted.
// m.mu held.
func (m *Manager) yieldGone(r *InstanceRecord, now time.Time) {
	for to, rs := range m.yields {
		y, ok := rs[r]
		if !ok {
			continue
		}
		p := r.Instance.Provider
		if y.limit {
			delete(m.kindHold, kindKey(p, r.Instance.Offer.BareMetal))
		} else {
			m.catalog.invalidate(p)
			m.offersGen++
			m.offersAt = time.Time{}
			k := to + "|" + r.Instance.Offer.Key()
			if a, ok := m.avoid[k]; ok && a.why == refusalReason(ErrNoCapacity) {
				delete(m.avoid, k)
			}
		}
		if now.Before(m.fleetRetry[to]) {
			m.fleetRetry[to] = now
		}
		return
	}
}
