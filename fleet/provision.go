package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// backoff is a capped exponential delay with jitter: about min·2^(n-1),
// never above max, drawn from [d/2, d].
func backoff(n int, min, max time.Duration) time.Duration {
	d := min
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d/2 + rand.N(d/2+1)
}

// definiteCreateFailure reports whether a create error proves nothing was
// created, so the next offer may be tried at once. Anything else (5xx,
// transport failure, timeout) may hide a success.
func definiteCreateFailure(err error) bool {
	for _, class := range []error{ErrNoCapacity, ErrInvalidRequest, ErrVPCUnsupported, ErrQuotaExceeded,
		ErrInsufficientBalance, ErrUnauthorized, ErrForbidden, ErrNotFound, ErrRateLimited, ErrNotSent} {
		if errors.Is(err, class) {
			return true
		}
	}
	return false
}

// planCreates decides the creates of this step: for each fleet short of
// members, new pending records (marked uncertain, since from the moment of
// the call the resource may exist), as many as Policy.MaxConcurrentCreates
// leaves room for. Fleets with too many members are shrunk here. m.mu held.
func (m *Manager) planCreates(ctx context.Context, now time.Time) []*InstanceRecord {
	var out []*InstanceRecord
	for _, name := range m.fleetNames() {
		f := m.fleets[name]
		if f.Deleting {
			continue
		}
		need := m.fleetNeed(f, now)
		if need <= 0 || now.Before(m.fleetRetry[name]) || f.Stalled || !m.listedFor(f.Spec) {
			continue
		}
		if m.vpcBeingDeleted(f) {
			continue // no member was left and its VPC is being deleted: no create joins it
		}
		waitVPC := f.Spec.Placement == PlacementCluster && f.VPC == nil && m.vpcFirst(name)
		if waitVPC {
			if m.fleetHasMember(name) {
				continue // one at a time until the VPC exists; members then attach at create
			}
			need = 1
		}
		offers, ok := m.offersFor(ctx, f, now)
		if !ok {
			continue
		}
		for range need {
			if m.free(taskCreate)-len(out) <= 0 {
				return out
			}
			o := offers[0]
			if !m.offerOK[o.Key()] && m.creating(o.Key(), out) {
				break // an offer not yet proven since start: one create at a time, so a stale catalog costs one refusal
			}
			out = append(out, m.newPending(f, o, now))
			if waitVPC {
				break
			}
		}
	}
	return out
}

func (m *Manager) fleetNames() []string {
	names := make([]string, 0, len(m.fleets))
	for name := range m.fleets {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// creating reports whether a create of offer key is under way or planned. m.mu held.
func (m *Manager) creating(key string, planned []*InstanceRecord) bool {
	for _, r := range planned {
		if r.Instance.Offer.Key() == key {
			return true
		}
	}
	for _, r := range m.insts {
		if r.Instance.ID == "" && r.CreateUncertain && m.busy("create/"+r.Instance.RequestID) && r.Instance.Offer.Key() == key {
			return true
		}
	}
	return false
}

// isMember reports whether r counts towards its fleet's size (creates
// under way included, so nothing is created twice).
func isMember(r *InstanceRecord) bool {
	return !r.Orphan && r.Termination == nil && r.Instance.Status != StatusTerminated
}

// members returns a fleet's records that count towards its size, oldest
// first. m.mu held.
func (m *Manager) members(fleet string) []*InstanceRecord {
	var live []*InstanceRecord
	for _, r := range m.byFleet[fleet] {
		if isMember(r) {
			live = append(live, r)
		}
	}
	sortRecords(live)
	return live
}

// memberCount is len(members(fleet)) without sorting. m.mu held.
func (m *Manager) memberCount(fleet string) int {
	if n, ok := m.counts[fleet]; ok {
		return n
	}
	n := 0
	for _, r := range m.byFleet[fleet] {
		if isMember(r) {
			n++
		}
	}
	m.counts[fleet] = n
	return n
}

func (m *Manager) fleetHasMember(fleet string) bool { return m.memberCount(fleet) > 0 }

// vpcFirst reports whether a cluster fleet's members will share a VPC:
// its first member (or, before one exists, any configured provider) can
// join one. Then the fleet grows one member at a time until the VPC
// exists, and the rest attach at create. m.mu held.
func (m *Manager) vpcFirst(fleet string) bool {
	for _, r := range m.members(fleet) {
		_, ok := m.providers[r.Instance.Provider].(VPCProvider)
		return ok && r.Instance.Offer.SupportsVPC
	}
	for _, p := range m.providers {
		if _, ok := p.(VPCProvider); ok {
			return true
		}
	}
	return false
}

// surplus reports whether fleet has more members than it wants. m.mu held.
func (m *Manager) surplus(fleet string) bool {
	f := m.fleets[fleet]
	return f != nil && m.memberCount(fleet) > f.Spec.Nodes
}

// fleetNeed shrinks a fleet with too many members, takes back members whose
// release still waits for its window, and returns how many to create: not
// counting the releases it could take back but for a delete call under way
// (a refused retry of an adopted server's release, see minimumNotOver),
// whose answer the fleet waits for — a refusal lets the next pass take the
// instance back, and only an accepted release leaves a create to make.
// m.mu held.
func (m *Manager) fleetNeed(f *FleetRecord, now time.Time) int {
	need := f.Spec.Nodes - m.memberCount(f.Spec.Name)
	if need < 0 {
		if m.marksRead(f.Spec.Name, now) { // busy marks recorded through other replicas first
			m.shrink(m.members(f.Spec.Name), -need, f, now)
		}
		return 0
	}
	if need > 0 {
		taken, inFlight := m.reclaim(f.Spec.Name, need, now)
		need -= taken + inFlight
	}
	return need
}

// reclaimForGrowth takes back, before this pass starts any delete call,
// the releases of fleets short of members (an Apply carried out in this
// pass) that reclaim can: a retry falling due in the same pass would
// otherwise be under way when planCreates looks, and the fleet would wait
// for its answer. m.mu held.
func (m *Manager) reclaimForGrowth(now time.Time) {
	for _, name := range m.fleetNames() {
		f := m.fleets[name]
		if need := f.Spec.Nodes - m.memberCount(name); need > 0 && !f.Deleting {
			m.reclaim(name, need, now)
		}
	}
}

// listedFor reports whether every kind of instance of every provider that
// could hold a fleet's members has been listed since the Manager started,
// so that nothing that already exists is created again. A kind a
// provider's catalog has no offer of for the fleet (sold out or not), and
// the Requirements.BareMetal excludes, holds none of its members under this
// spec, and is not waited for: a provider, or a kind of it, that cannot be
// listed (a wrong or revoked key, a key without bare-metal access, with
// one alert: see listFailed) does not stop a fleet only the others can
// serve. One that could serve it is waited for even then: after a lost
// Store it may hold the fleet's members, and creating elsewhere would buy
// them again (tester AB). m.mu held.
func (m *Manager) listedFor(s Spec) bool {
	for _, name := range m.order {
		if len(s.Requirements.Providers) > 0 && !containsFold(s.Requirements.Providers, name) {
			continue
		}
		for _, metal := range []bool{false, true} {
			if !m.kindsListed[name].has(metal) && m.mayHold(s, name, metal) {
				return false
			}
		}
	}
	return true
}

// mayHold reports whether provider's instances of a kind (bare metal or
// VMs) may be members of fleet s: it has a record of that kind, or the
// provider's catalog may offer that kind under the fleet's requirements.
// m.mu held.
func (m *Manager) mayHold(s Spec, provider string, bareMetal bool) bool {
	kind := No
	if bareMetal {
		kind = Yes
	}
	if s.Requirements.BareMetal != Any && s.Requirements.BareMetal != kind {
		return m.hasRecordOn(s.Name, provider, bareMetal)
	}
	req := s.Requirements
	req.BareMetal = kind
	return m.hasRecordOn(s.Name, provider, bareMetal) || m.catalog.mayOffer(provider, req)
}

// hasRecordOn reports whether the Manager has a record of fleet on
// provider of a kind (bare metal or VMs; a record of no known offer yet is
// of either). m.mu held.
func (m *Manager) hasRecordOn(fleet, provider string, bareMetal bool) bool {
	for _, r := range m.byFleet[fleet] {
		if r.Instance.Provider == provider && (r.Instance.Offer.InstanceType == "" || r.Instance.Offer.BareMetal == bareMetal) {
			return true
		}
	}
	return false
}

// offersFor returns the fleet's usable offers, cheapest first, from the
// cached catalog; when the catalog must be fetched it starts the fetch and
// returns false. m.mu held.
func (m *Manager) offersFor(ctx context.Context, f *FleetRecord, now time.Time) ([]Offer, bool) {
	req := f.Spec.Requirements
	if f.Spec.Placement == PlacementCluster {
		req.Cluster = true
		if a := m.anchor(f); a != nil {
			if outside(req.Providers, a.Provider) || outside(req.Regions, a.Region) {
				m.clusterOutside(f, a, now)
				return nil, false
			}
			req.Providers, req.Regions = []string{a.Provider}, []string{a.Region}
		}
	}
	offers, fresh := m.catalog.peek(req)
	if !fresh && !m.busy("offers") && (m.offersAt.IsZero() || now.Sub(m.offersAt) >= time.Minute) {
		used, gen := m.providersInUse(), m.offersGen
		m.launch("offers", taskCall, catalogFetchTimeout, func(ctx context.Context) func(time.Time) {
			_, err := m.catalog.Offers(ctx, Requirements{Providers: used})
			return func(now time.Time) {
				m.offersErr, m.offersAt = err, now
				if m.offersGen != gen {
					m.offersAt = time.Time{} // the catalog was invalidated meanwhile: fetch again at once
				}
			}
		})
	}
	if len(offers) == 0 && m.busy("offers") {
		return nil, false // wait for the catalog
	}
	err := m.offersErr
	if f.Spec.Placement != PlacementCluster {
	} else if a := m.anchor(f); a != nil {
		offers = preferType(offers, a.InstanceType)
	}
	matched := offers
	offers = m.withoutAvoided(f.Spec.Name, offers, now)
	if len(offers) == 0 {
		m.noOffers(f, matched, err, now)
		// The matching offers are sold out or skipped: re-buy holds on the
		// sold-out ones yield while the fleet is short (see noteRefused).
		m.noteNoStock(f.Spec.Name, req, now)
		m.noteLimitHeld(f.Spec.Name, matched, now)
		return nil, false
	}
	return offers, true
}

// outside reports whether a non-empty allow-list leaves v out.
func outside(allowed []string, v string) bool { return len(allowed) > 0 && !containsFold(allowed, v) }

// clusterOutside reports that a cluster fleet, which stays where its members
// and VPC are, cannot grow there because its requirements now exclude that
// provider or region; nothing is created. m.mu held.
func (m *Manager) clusterOutside(f *FleetRecord, a *Offer, now time.Time) {
	m.fleetFails[f.Spec.Name]++
	wait := backoff(m.fleetFails[f.Spec.Name], time.Minute, 10*time.Minute)
	m.fleetRetry[f.Spec.Name] = now.Add(wait)
	m.event(Event{Type: EventNoOffers, Fleet: f.Spec.Name, At: now.Add(wait), Message: fmt.Sprintf(
		"the cluster lives on %s in %s (its members and VPC), which its requirements now exclude: nothing is created there; "+
			"release its members to move it, or allow %s %s again", a.Provider, a.Region, a.Provider, a.Region)})
}

// providersInUse names the providers some fleet may create on. m.mu held.
func (m *Manager) providersInUse() []string {
	var out []string
	for _, name := range m.order {
		for _, f := range m.fleets {
			if !f.Deleting && (len(f.Spec.Requirements.Providers) == 0 || containsFold(f.Spec.Requirements.Providers, name)) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// anchor is where a cluster fleet lives: its first member's offer, or its
// VPC's provider and region. m.mu held.
func (m *Manager) anchor(f *FleetRecord) *Offer {
	for _, r := range m.members(f.Spec.Name) {
		if r.Instance.Offer.InstanceType != "" {
			o := r.Instance.Offer
			return &o
		}
	}
	if f.VPC != nil && !f.VPC.Deleting {
		return &Offer{Provider: f.VPC.VPC.Provider, Region: f.VPC.VPC.Region}
	}
	return nil
}

// reclaim takes back up to n members of fleet whose release for scale-down
// or idleness, or as orphans of the fleet (found without it, after a restart
// that lost the Store), is still waiting for its reservation window (no
// attempt made yet): they are paid anyway, so growing the fleet reuses them
// instead of creating new ones, the cheapest to keep first (keepCost: a
// cheaper plan before a dearer one), then the most paid time left. Only
// members whose offer the fleet's requirements still take (a spec moved to
// another plan creates the new one; Requirements.keeps). It
// returns how many it took back, and how many more of the rest of n it
// could take back but for a delete call under way (inFlight: the call's
// answer decides). m.mu held.
func (m *Manager) reclaim(fleet string, n int, now time.Time) (taken, inFlight int) {
	take, under := m.reclaimable(fleet, n, now)
	for _, r := range take {
		r.Termination, r.Orphan = nil, false // an orphan of the fleet: its own again
		m.dirtyI[r.Instance.RequestID] = true
		delete(m.counts, fleet)
		m.seen[r.Instance.RequestID] = time.Time{} // listed again at once: it may have gone while it waited
		switch {
		case !r.Instance.Ready.IsZero():
			r.IdleSince = now
			m.setStatus(r, StatusIdle, "release cancelled: the fleet grew again", now)
		case !r.RunningSince.IsZero():
			m.setStatus(r, StatusBooting, "release cancelled: the fleet grew again", now)
		default:
			m.setStatus(r, StatusProvisioning, "release cancelled: the fleet grew again", now)
		}
		m.event(Event{Type: EventReleaseCancelled, Fleet: fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			Message: "the fleet grew again before the reservation window ended; reused instead of creating"})
	}
	return len(take), min(under, n-len(take))
}

// reclaimable picks the members of fleet that reclaim takes back for n
// more nodes (take, in its order), and counts the ones it would take but
// for a delete call under way (under). It changes nothing. m.mu held.
func (m *Manager) reclaimable(fleet string, n int, now time.Time) (take []*InstanceRecord, under int) {
	var cands []*InstanceRecord
	for _, r := range m.byFleet[fleet] {
		if r.Termination != nil && r.Instance.Status == StatusTerminating {
			cands = append(cands, r)
		}
	}
	sortRecords(cands)
	// The cheapest to keep first (keepCost), then the most paid time left
	// (Acquire's order), ready ones first among equals: the ones taken back
	// serve jobs, the others go.
	slices.SortStableFunc(cands, func(a, b *InstanceRecord) int {
		if x := m.byKeepCost(a, b, now); x != 0 {
			return x // the cheapest to keep first: it serves the next jobs for the least
		}
		if x := m.paidUntil(b, now).Compare(m.paidUntil(a, now)); x != 0 {
			return x
		}
		return cmp.Compare(boolRank(a.Instance.Ready.IsZero()), boolRank(b.Instance.Ready.IsZero()))
	})
	f := m.fleets[fleet]
	for _, r := range cands {
		t := r.Termination
		if len(take) == n || r.Instance.Fleet != fleet || t == nil || r.Instance.Status != StatusTerminating ||
			!releaseWaits(t, now) || (t.Reason != "scale down" && t.Reason != "idle" && !(t.Reason == "orphan" && r.Orphan)) ||
			f != nil && !f.Spec.Requirements.keeps(r.Instance.Offer) { // another plan than the spec asks for now (tester AQ)
			continue
		}
		if m.busy("delete/" + r.Instance.RequestID) {
			under++
			continue
		}
		take = append(take, r)
	}
	return take, under
}

// growthReclaims is the set of waiting releases that reclaimForGrowth
// takes back in this pass for the fleets short of members (reclaimable).
// They do not give way to another fleet (yieldHolds): the idle release,
// which forces a waiting release for a refused fleet, runs before the
// growth's reclaim in a pass, and a node forced away there would be bought
// again by its own fleet, a new minimum. m.mu held.
func (m *Manager) growthReclaims(now time.Time) map[*InstanceRecord]bool {
	var out map[*InstanceRecord]bool
	for _, name := range m.fleetNames() {
		f := m.fleets[name]
		need := f.Spec.Nodes - m.memberCount(name)
		if need <= 0 || f.Deleting {
			continue
		}
		take, _ := m.reclaimable(name, need, now)
		for _, r := range take {
			if out == nil {
				out = map[*InstanceRecord]bool{}
			}
			out[r] = true
		}
	}
	return out
}

// releaseWaits reports whether a release still waits, with the instance
// surely kept: for its reservation window (no attempt made yet), or for a
// minimum reservation whose end is unknown (every attempt so far refused
// for it, see minimumNotOver).
func releaseWaits(t *Termination, now time.Time) bool {
	if !t.Accepted.IsZero() {
		return false
	}
	if t.Attempts == 0 {
		return now.Before(t.NotBefore)
	}
	return t.Attempts == t.MinRefused
}

// shrink releases n members: stopped ones first (they would be replaced),
// then creates under way (released as soon as they answer), then
// provisioning, booting and idle ones; within each, the dearest to keep
// first (keepCost: a dearer plan before a cheaper one, each priced for the
// next hour beyond what it has paid), then the least paid time left
// (Acquire's order reversed: the ones kept have the most paid time to serve
// jobs — a Hot Aisle bare-metal server still installing has 8 prepaid hours,
// an idle one past its minimum none), among equals those not ready yet,
// newest first; never busy ones, nor ones Acquire handed out whose busy
// mark is not carried out yet. m.mu held.
func (m *Manager) shrink(live []*InstanceRecord, n int, f *FleetRecord, now time.Time) {
	for _, stopped := range []bool{true, false} {
		n = m.shrinkOf(live, n, []Status{StatusPending}, stopped, f, now)
		n = m.shrinkOf(live, n, []Status{StatusProvisioning, StatusBooting, StatusIdle}, stopped, f, now)
	}
}

// shrinkOf releases up to n members of the given statuses (stopped ones
// only, or any) in shrink's order, and returns how many are still to
// release. m.mu held.
func (m *Manager) shrinkOf(live []*InstanceRecord, n int, want []Status, stopped bool, f *FleetRecord, now time.Time) int {
	var cands []*InstanceRecord
	for i := len(live) - 1; i >= 0; i-- {
		r := live[i]
		// Never a node handed out by Acquire whose busy mark is not carried
		// out yet (m.acquired): its job runs on it (tester AP).
		if slices.Contains(want, r.Instance.Status) && r.Termination == nil && !r.Busy && !m.acquired[r.Instance.RequestID] && (r.Instance.Stopped || !stopped) {
			cands = append(cands, r)
		}
	}
	// An instance whose start is unknown may still be inside its minimum
	// (its release may well wait for it): after the known ones with as
	// little paid time left.
	slices.SortStableFunc(cands, func(a, b *InstanceRecord) int {
		if x := m.byKeepCost(b, a, now); x != 0 {
			return x // the dearest to keep first: releasing it saves the most
		}
		if x := m.paidUntil(a, now).Compare(m.paidUntil(b, now)); x != 0 {
			return x
		}
		if x := cmp.Compare(boolRank(a.CreatedUnknown), boolRank(b.CreatedUnknown)); x != 0 {
			return x
		}
		return cmp.Compare(boolRank(a.Instance.Status == StatusIdle), boolRank(b.Instance.Status == StatusIdle))
	})
	for _, r := range cands[:min(n, len(cands))] {
		m.requestRelease(r, "scale down", m.policyFor(f), now, true)
	}
	return n - min(n, len(cands))
}

// withoutAvoided drops the offers the fleet skips for now. m.mu held.
func (m *Manager) withoutAvoided(fleet string, offers []Offer, now time.Time) []Offer {
	out := offers[:0:0]
	for _, o := range offers {
		if _, ok := m.providers[o.Provider]; ok && !m.avoided(fleet, o, now) && !now.Before(m.createHold(o)) &&
			!m.listRefused[o.Provider].covers(o) { // only its kind's listing proves a create landed
			out = append(out, o)
		}
	}
	return out
}

// preferType moves offers of the given instance type to the front.
func preferType(offers []Offer, typ string) []Offer {
	out := make([]Offer, 0, len(offers))
	for _, o := range offers {
		if o.InstanceType == typ {
			out = append(out, o)
		}
	}
	for _, o := range offers {
		if o.InstanceType != typ {
			out = append(out, o)
		}
	}
	return out
}

// noOffers backs a fleet's creates off and says why. m.mu held.
func (m *Manager) noOffers(f *FleetRecord, matched []Offer, err error, now time.Time) {
	fleet := f.Spec.Name
	m.fleetFails[fleet]++
	wait := backoff(m.fleetFails[fleet], time.Minute, 10*time.Minute)
	m.fleetRetry[fleet] = now.Add(wait)
	all, _ := m.catalog.peek(Requirements{Providers: f.Spec.Requirements.Providers, IncludeSoldOut: true})
	msg := fmt.Sprintf("0 of %d offers match (%s); retrying later", len(all), whyNoMatch(all, f.Spec.Requirements))
	if len(matched) > 0 {
		msg = fmt.Sprintf("all %d matching offers are skipped for now (%s); retrying later", len(matched), m.whySkipped(fleet, matched, now))
	}
	e := Event{Type: EventNoOffers, Fleet: fleet, At: now.Add(wait), Message: msg}
	if err != nil {
		e.Err = err.Error()
	}
	m.event(e)
}

// heldByAnother reports whether a live record other than r holds the
// instance id of r's provider. m.mu held.
func (m *Manager) heldByAnother(r *InstanceRecord, id string) bool {
	for _, x := range m.insts {
		if x != r && x.Instance.ID == id && x.Instance.Provider == r.Instance.Provider && x.Instance.Status != StatusTerminated {
			return true
		}
	}
	return false
}

// whySkipped says why a fleet skips each of its matching offers now (at
// most three named, then how many more), and the last refusal. m.mu held.
func (m *Manager) whySkipped(fleet string, matched []Offer, now time.Time) string {
	var parts []string
	for i, o := range matched {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(matched)-i))
			break
		}
		why := "refused"
		if a := m.avoid[fleet+"|"+o.Key()]; now.Before(a.until) {
			why = fmt.Sprintf("%s; skipped until %s", a.why, a.until.UTC().Format("15:04"))
		} else if h := m.providerHold[o.Provider]; now.Before(h) {
			why = fmt.Sprintf("provider %s held back until %s", o.Provider, h.UTC().Format("15:04"))
		} else if h := m.kindHold[kindKey(o.Provider, o.BareMetal)]; now.Before(h) {
			why = fmt.Sprintf("%s on %s held back until %s (the account's instance limit)", kindOf(o.BareMetal), o.Provider, h.UTC().Format("15:04"))
		} else if k := kindOf(o.BareMetal); m.listRefused[o.Provider].covers(o) {
			why = fmt.Sprintf("the account refuses the listing of %s on %s", k, o.Provider)
		}
		parts = append(parts, o.Key()+": "+why)
	}
	if last := m.lastRefusal[fleet]; last != "" {
		parts = append(parts, "last refusal: "+last)
	}
	return strings.Join(parts, ", ")
}

// newPending records a member before its create call, so that a crash
// right after the call still leaves a record to look the label up with.
// m.mu held.
func (m *Manager) newPending(f *FleetRecord, o Offer, now time.Time) *InstanceRecord {
	r := &InstanceRecord{Instance: Instance{Provider: o.Provider, Fleet: f.Spec.Name, Owner: m.owner, RequestID: NewRequestID(),
		Offer: o, Created: now}, CreateUncertain: true, CreateUncertainSince: now}
	if f.VPC != nil && !f.VPC.Deleting && f.VPC.VPC.Provider == o.Provider && f.VPC.VPC.ID != "" {
		r.Instance.VPCID = f.VPC.VPC.ID
	}
	if o.LabelAfterCreate {
		r.UnlabelledBefore = m.unlabelledOf(o)
	}
	m.addRecord(r)
	m.setStatus(r, StatusPending, "creating", now)
	if o.SlowProvisioning {
		m.event(Event{Type: EventSlowProvisioning, Fleet: f.Spec.Name, Provider: o.Provider, InstanceID: r.Instance.RequestID,
			Message: fmt.Sprintf("%s is known to provision slowly; deadline %s", o.InstanceType, m.provisionTimeout(o))})
	}
	return r
}

// launchCreates starts the create calls of this step, whose records the
// Store now holds; when the write failed or ctx ended, the records are
// dropped (no call was made). m.mu held.
func (m *Manager) launchCreates(ctx context.Context, recs []*InstanceRecord, storeErr error) {
	for _, r := range recs {
		reqID := r.Instance.RequestID
		if m.insts[reqID] != r {
			continue // dropped with its fleet (lease lost)
		}
		if (storeErr != nil && m.dirtyI[reqID]) || ctx.Err() != nil || r.Termination != nil || !m.holds(r.Instance.Fleet, m.clock.Now()) {
			m.dropPending(reqID)
			continue
		}
		prov := m.providers[r.Instance.Provider]
		f := m.fleets[r.Instance.Fleet]
		req := CreateRequest{Offer: r.Instance.Offer, Label: Label{Owner: m.owner, Fleet: r.Instance.Fleet, RequestID: reqID},
			SSHKeys: slices.Clone(f.Spec.SSHKeys), VPCID: r.Instance.VPCID}
		m.launch("create/"+reqID, taskCreate, m.pol.CreateTimeout, func(cctx context.Context) func(time.Time) {
			if why := m.createNotWanted(ctx, reqID); why != "" {
				return func(time.Time) { m.dropPending(reqID) }
			}
			inst, err := prov.Create(cctx, req)
			return func(now time.Time) { m.createResult(reqID, inst, req.VPCID, err, now) }
		})
	}
}

// createNotWanted checks, right before a create call, the pass's ctx and
// the current intent (a Delete or a shrink recorded since the plan).
func (m *Manager) createNotWanted(ctx context.Context, reqID string) string {
	if ctx.Err() != nil {
		return "the pass was cancelled"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.insts[reqID]
	if r == nil || r.Termination != nil {
		return "released before the call"
	}
	m.intents.mu.Lock()
	_, deleted := m.intents.fleetState(r.Instance.Fleet)
	for _, op := range m.intents.ops {
		if op.kind == intentApply && op.spec.Name == r.Instance.Fleet && op.spec.Nodes < m.memberCount(r.Instance.Fleet) {
			deleted = true
		}
	}
	m.intents.mu.Unlock()
	if f := m.fleets[r.Instance.Fleet]; f == nil || f.Deleting || deleted {
		return "the fleet no longer wants it"
	}
	if !m.holds(r.Instance.Fleet, m.clock.Now()) {
		return "this replica no longer holds the fleet's lease"
	}
	return ""
}

// dropPending forgets a pending record whose create call was never made. m.mu held.
func (m *Manager) dropPending(reqID string) {
	m.removeRecord(reqID)
	delete(m.dirtyI, reqID)
	m.goneI[reqID] = true
}

// createResult applies the outcome of a create call (or of finding an
// uncertain create by its label) against the intent as it is now: a member
// its fleet no longer wants is released at once. m.mu held.
func (m *Manager) createResult(reqID string, inst Instance, vpcID string, err error, now time.Time) {
	r := m.insts[reqID]
	if r == nil {
		if err == nil && inst.ID != "" && m.rep == nil {
			m.track(inst, reqID, now) // an orphan: released after its grace
		}
		return // replicas: the fleet's holder resolves it by label
	}
	fleet, provider := r.Instance.Fleet, r.Instance.Provider
	if f := m.fleets[fleet]; f != nil && len(f.Spec.SSHKeys) > 0 && keyProvider(m.providers[provider]) != nil {
		m.keysDirty[provider] = true // the call may have registered keys, whatever it answered: list them
	}
	if err == nil && inst.ID != "" && r.Instance.Offer.LabelAfterCreate && m.heldByAnother(r, inst.ID) {
		// The provider took, as this create's, an unlabelled instance that a
		// listing already matched to an earlier uncertain create: this
		// create's own instance may still land; it is looked up as uncertain.
		err = fmt.Errorf("the provider answered with %s, which another create holds: %w", inst.ID, ErrUnavailable)
		inst = Instance{}
	}
	switch {
	case err == nil && inst.ID != "":
		m.answered[reqID] = now
		m.created(r, inst, vpcID, now)
		if r.Termination != nil {
			return // released while the call was under way: the release goes on
		}
		if f := m.fleets[fleet]; f == nil || f.Deleting {
			m.requestRelease(r, "fleet deleted", m.policyFor(f), now, true)
		} else if m.surplus(fleet) {
			m.requestRelease(r, "scale down", m.policyFor(f), now, true)
		}
	case err == nil:
		err = errors.New("the provider answered without an instance id")
		fallthrough
	case !definiteCreateFailure(err):
		m.suspectProvider(provider, now)
		r.CreateUncertainSince, r.CreateAnswered = now, true // the lookup runs from the answer: a late commit is still found
		r.Instance.LastError = err.Error()
		m.dirtyI[reqID] = true
		m.event(Event{Type: EventCreateUncertain, Fleet: fleet, Provider: provider, InstanceID: reqID, Err: err.Error(),
			Message: "the create may have happened; looking it up by label before any new create"})
	default:
		m.lastRefusal[fleet] = err.Error()
		switch {
		case errors.Is(err, ErrQuotaExceeded):
			// The account's instance limit, one per kind (Hot Aisle's
			// maximum_virtual_machines, maximum_bare_metal_servers): the
			// kind's creates are held, the other kind's go on, and nodes of
			// the provider and kind kept with no job give way (yieldHolds).
			m.holdKind(r.Instance.Offer, err, now)
			m.noteLimitRefused(fleet, r.Instance.Offer)
		case accountRefusal(err):
			m.holdProvider(provider, err, now)
		case !errors.Is(err, ErrRateLimited) && !errors.Is(err, ErrNotSent): // neither says anything of the offer
			m.avoidOffer(fleet, r.Instance.Offer, now.Add(soldOutPenalty), refusalReason(err))
			if errors.Is(err, ErrNoCapacity) {
				m.noteCreateSoldOut(fleet, r.Instance.Offer, now)
			}
			delete(m.offerOK, r.Instance.Offer.Key())
		default: // the same create would be refused again at once: the fleet's next one waits
			m.fleetFails["paced/"+fleet]++
			m.fleetRetry[fleet] = maxTime(m.fleetRetry[fleet], now.Add(m.failWait(m.fleetFails["paced/"+fleet], err)))
		}
		m.dropPending(reqID)
		m.event(Event{Type: EventOfferSkipped, Fleet: fleet, Provider: provider, Message: r.Instance.Offer.String(), Err: err.Error()})
	}
}

// refusalReason says in words why a create of an offer was refused.
func refusalReason(err error) string {
	switch {
	case errors.Is(err, ErrNoCapacity):
		return "sold out"
	case errors.Is(err, ErrVPCUnsupported):
		return "no VPC support"
	case errors.Is(err, ErrNotFound):
		return "not found by the provider"
	case errors.Is(err, ErrInvalidRequest):
		return "refused as invalid"
	}
	return "refused"
}

// accountRefusal reports whether a create was refused for the whole
// account (key, permission, quota or instance limit, balance), not for one
// offer: no other offer of the provider would do better.
func accountRefusal(err error) bool {
	for _, class := range []error{ErrUnauthorized, ErrForbidden, ErrQuotaExceeded, ErrInsufficientBalance} {
		if errors.Is(err, class) {
			return true
		}
	}
	return false
}

// holdProvider stops a provider's creates after an account-level refusal,
// backing off from 5 minutes to an hour; one alert per spell. m.mu held.
func (m *Manager) holdProvider(provider string, err error, now time.Time) {
	said := m.refusing(provider) // a spell already alerted (a kind's listing refused first)
	m.holdFails[provider]++
	until := now.Add(backoff(m.holdFails[provider], 10*time.Minute, time.Hour))
	if until.After(m.providerHold[provider]) {
		m.providerHold[provider] = until
	}
	if !said {
		m.event(Event{Type: EventCreatesRefused, Provider: provider, Err: err.Error(), At: until,
			Message: "the account refused a call (key, permission, quota or balance); no creates on this provider until the next try, backing off up to an hour"})
	}
}

// holdKind stops the creates of offer o's kind on its provider after a
// refusal for the account's instance limit, backing off as holdProvider
// does (one spell per kind, ended by a create of that kind; one alert),
// and returns until when. m.mu held.
func (m *Manager) holdKind(o Offer, err error, now time.Time) time.Time {
	k := kindKey(o.Provider, o.BareMetal)
	said := m.refusing(o.Provider) || m.holdFails[k] > 0
	m.holdFails[k]++ // the kind's own spell: a create of the other kind does not end it
	until := now.Add(backoff(m.holdFails[k], 10*time.Minute, time.Hour))
	if until.After(m.kindHold[k]) {
		m.kindHold[k] = until
	}
	if !said {
		m.event(Event{Type: EventCreatesRefused, Provider: o.Provider, Err: err.Error(), At: until,
			Message: "the account's instance limit refused a create; no creates of " + kindOf(o.BareMetal).String() +
				" on this provider until the next try (the other kind goes on), backing off up to an hour"})
	}
	return until
}

// createHold is when creates of offer o may go again after a refusal of
// the account: the provider's hold, or its kind's (instance limit). m.mu
// held.
func (m *Manager) createHold(o Offer) time.Time {
	return maxTime(m.providerHold[o.Provider], m.kindHold[kindKey(o.Provider, o.BareMetal)])
}

// created fills r from a successful create. m.mu held.
func (m *Manager) created(r *InstanceRecord, inst Instance, vpcID string, now time.Time) {
	delete(m.holdFails, r.Instance.Provider)
	delete(m.providerHold, r.Instance.Provider)
	delete(m.kindHold, kindKey(r.Instance.Provider, r.Instance.Offer.BareMetal))
	delete(m.holdFails, kindKey(r.Instance.Provider, r.Instance.Offer.BareMetal))
	m.offerOK[r.Instance.Offer.Key()] = true
	r.CreateUncertain = false
	r.Instance.ID, r.Instance.ProviderStatus = inst.ID, inst.ProviderStatus
	r.Instance.PublicIP, r.Instance.PrivateIP, r.Instance.SSH = inst.PublicIP, inst.PrivateIP, inst.SSH
	r.Instance.VPCID = vpcID
	r.Instance.LabelError = inst.LabelError
	switch {
	case !inst.Created.IsZero():
		r.Instance.Created = inst.Created // the provider's own (Vultr's date_created)
		r.CreatedLatest = time.Time{}
	case !r.CreatedLatest.IsZero():
		// Found by a listing after its create's answer was lost or
		// ambiguous (foundLate, readopt): it began between earliestStart
		// and CreatedLatest. Its windows count from the earlier; its
		// release is forced only near the later's minimum end.
		r.Instance.Created = m.earliestStart(r)
		delete(m.createMissed, r.Instance.RequestID)
	case now.After(r.Instance.Created):
		// The provider gives no start (Hot Aisle): the reservation began
		// between the plan (Created so far) and now, when the create
		// answered or its label was found. Its windows count from now, so
		// that its minimum is never taken as over before it is (a slow
		// create would otherwise be forced inside it).
		r.Instance.Created = now
	}
	r.Instance.ReservedUntil = m.reservedUntil(r, now)
	m.refusalServed(r.Instance.Fleet)
	m.yieldTaken(r) // the stock a node freed for it, if that is what it took, is taken
	if t := r.Termination; t != nil && t.Attempts == 0 && !t.NotBefore.IsZero() {
		t.NotBefore = maxTime(t.NotBefore, r.Instance.ReservedUntil) // released while the call was under way: its window as it is now known
	}
	m.dirtyI[r.Instance.RequestID] = true
	delete(m.fleetFails, r.Instance.Fleet)
	delete(m.fleetFails, "paced/"+r.Instance.Fleet)
	m.event(Event{Type: EventInstanceCreated, Fleet: r.Instance.Fleet, Provider: r.Instance.Provider, InstanceID: inst.ID,
		Message: r.Instance.RequestID + " → " + inst.ID + " " + r.Instance.Offer.String(), At: r.Instance.ReservedUntil})
	if r.Termination != nil {
		return
	}
	m.setStatus(r, StatusProvisioning, "created", now)
	if inst.Running() {
		m.markRunning(r, now)
	}
}

// boolRank orders false before true.
func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
