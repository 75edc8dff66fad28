package fleet

import (
	"slices"
	"time"
)

// rebuyKeep bounds the jobs remembered per fleet for the re-buy hold
// (FleetRecord.Jobs).
const rebuyKeep = 64

// rebuyLog is what the Manager keeps beside a fleet's recorded jobs
// (FleetRecord.FirstJob, Jobs) for the re-buy hold: the jobs under way, and
// the latest choice for each kind of offer its nodes have (a fleet whose
// spec changed may have nodes of several; see bestRebuy).
type rebuyLog struct {
	since   map[string]time.Time // request id → busy since (ongoing)
	version int                  // bumped on every change
	choices map[rebuyKey]rebuyMemo
	fixed   *rebuyChoice // set by tests: the choice, whatever the jobs
}

// rebuyKey is what of an offer the re-buy replay depends on (bestRebuy):
// offers alike in it share their hold.
type rebuyKey struct {
	minimum, boot time.Duration
}

func rebuyKeyOf(o Offer) rebuyKey { return rebuyKey{o.MinimumReservation, o.TypicalBoot} }

// rebuyMemo is the latest choice for one rebuyKey.
type rebuyMemo struct {
	choice rebuyChoice
	chosen int       // version the choice was made at
	at     time.Time // when it was made
}

// noteBusy records a node of a per-minute offer with a minimum reservation
// becoming busy or idle: the first job of its kind (RebuyKind), and each
// job that ends, in its FleetRecord (stored: a Manager that restarts or a
// replica that takes the fleet over chooses the hold from the same jobs).
// A busy period that ends within rebuyNoWork did no work and is no job: it
// is not recorded, and the first job it set is taken back (noWork).
// m.mu held.
func (m *Manager) noteBusy(r *InstanceRecord, busy bool, now time.Time) {
	o, f := r.Instance.Offer, m.fleets[r.Instance.Fleet]
	if o.BillingGranularity >= time.Hour || o.MinimumReservation <= 0 || f == nil {
		return
	}
	l := m.rebuyLogOf(r.Instance.Fleet)
	id := r.Instance.RequestID
	at, ok := l.since[id]
	if !ok && !busy && r.BusySince.After(r.IdleSince) {
		at, ok = r.BusySince, true // busy before the log was rebuilt (IdleSince is still the previous one)
	}
	switch {
	case busy && !ok:
		l.since[id] = now
		if k := f.rebuyKind(o.MinimumReservation); k.FirstJob.IsZero() {
			k.FirstJob = now
			m.dirtyF[f.Spec.Name] = true
		}
	case !busy && ok:
		delete(l.since, id)
		if now.Sub(at) < rebuyNoWork {
			m.noWork(f, l, o.MinimumReservation, at) // given back at once: no job
			break
		}
		f.addJob(BusyPeriod{Start: at, Used: now.Sub(at), Minimum: o.MinimumReservation, Node: id})
		m.dirtyF[f.Spec.Name] = true
	default:
		return
	}
	l.version++
}

// addJob records an ended job in f.Jobs (the last rebuyKeep), unless it is
// there already: a holder whose fleet write landed but whose instance write
// did not (it died, or the write failed) has its MarkIdle carried out again
// by the next holder (tester AD).
func (f *FleetRecord) addJob(j BusyPeriod) {
	if slices.ContainsFunc(f.Jobs, func(p BusyPeriod) bool { return p.Node == j.Node && p.Start.Equal(j.Start) }) {
		return
	}
	jobs := append(f.Jobs, j) // in the order they ended: the first ended go first (a long job outlives later ones)
	f.Jobs = jobs[max(0, len(jobs)-rebuyKeep):]
}

// rebuyKind is f's RebuyKind for a minimum reservation, added when it has
// none.
func (f *FleetRecord) rebuyKind(minimum time.Duration) *RebuyKind {
	i := slices.IndexFunc(f.RebuyKinds, func(k RebuyKind) bool { return k.Minimum == minimum })
	if i < 0 {
		f.RebuyKinds = append(f.RebuyKinds, RebuyKind{Minimum: minimum})
		i = len(f.RebuyKinds) - 1
	}
	return &f.RebuyKinds[i]
}

// noteIdled records in r's FleetRecord that r, released now as idle, had
// been idle past its minimum reservation for more than rebuyGap (IdleSince
// is when it went idle): a hold, or an idle timer, ran out with no job, so
// holding can cost, and the re-buy replay judges from then on for offers
// with that minimum (bestRebuy). m.mu held.
func (m *Manager) noteIdled(r *InstanceRecord, now time.Time) {
	o, f := r.Instance.Offer, m.fleets[r.Instance.Fleet]
	if f == nil || r.Instance.Created.IsZero() || r.CreatedUnknown || o.BillingGranularity >= time.Hour || o.MinimumReservation <= 0 {
		return
	}
	if k := f.rebuyKind(o.MinimumReservation); !k.IdledPastMinimum &&
		now.Sub(maxTime(r.IdleSince, r.Instance.Created.Add(o.MinimumReservation))) > rebuyGap {
		k.IdledPastMinimum = true
		m.dirtyF[f.Spec.Name] = true
		if l := m.rebuy[f.Spec.Name]; l != nil {
			l.version++
		}
	}
}

// rebuyLogOf is fleet's rebuyLog, its jobs under way read from its records
// (BusySince) when the Manager has none: after a restart, or on a replica
// that took the fleet over; a record whose last job ended (IdleSince after
// BusySince) and is missing from FleetRecord.Jobs adds it, or, when it did
// no work (rebuyNoWork), takes back the first job it set (noWork). m.mu
// held.
func (m *Manager) rebuyLogOf(fleet string) *rebuyLog {
	if l := m.rebuy[fleet]; l != nil {
		return l
	}
	if m.rebuy == nil {
		m.rebuy = map[string]*rebuyLog{}
	}
	l := &rebuyLog{since: map[string]time.Time{}}
	m.rebuy[fleet] = l
	f := m.fleets[fleet]
	var atOnce []*InstanceRecord
	for id, r := range m.insts {
		o := r.Instance.Offer
		if r.Instance.Fleet != fleet || r.BusySince.IsZero() || o.BillingGranularity >= time.Hour || o.MinimumReservation <= 0 {
			continue
		}
		switch {
		case r.Busy:
			l.since[id] = r.BusySince
		case f != nil && r.IdleSince.After(r.BusySince) && r.IdleSince.Sub(r.BusySince) < rebuyNoWork:
			atOnce = append(atOnce, r) // given back at once: no job (its first job taken back below)
		case f != nil && r.IdleSince.After(r.BusySince) && (len(f.Jobs) < rebuyKeep || r.IdleSince.After(f.Jobs[0].Start.Add(f.Jobs[0].Used))):
			// Its MarkIdle was carried out but the fleet write with the
			// job was lost (tester AD): the job is in its record.
			f.addJob(BusyPeriod{Start: r.BusySince, Used: r.IdleSince.Sub(r.BusySince), Minimum: o.MinimumReservation, Node: id})
			m.dirtyF[fleet] = true
		}
	}
	for _, r := range atOnce { // its fleet write may have been lost as well
		m.noWork(f, l, r.Instance.Offer.MinimumReservation, r.BusySince)
	}
	return l
}

// rebuyWindow is how far back jobs are replayed: three hours, or twice the
// minimum reservation when longer.
func rebuyWindow(o Offer) time.Duration { return max(3*time.Hour, 2*o.MinimumReservation) }

// rebuyHold is the fleet's re-buy hold now for its idle nodes of offer o:
// the candidate that would have cost least on the fleet's jobs of the last
// rebuyWindow, and at least its last rebuyPriorJobs jobs however old
// (bestRebuy), with o's minimum reservation and boot time,
// chosen again when a job starts or ends and at least every ten minutes.
// No jobs: no hold. m.mu held.
func (m *Manager) rebuyHold(fleet string, o Offer, now time.Time) rebuyChoice {
	l, f := m.rebuyLogOf(fleet), m.fleets[fleet]
	if l.fixed != nil {
		return *l.fixed
	}
	if f == nil || len(f.Jobs) == 0 && len(l.since) == 0 {
		return rebuyChoice{}
	}
	if m.pol.RebuySpares > 0 {
		return rebuyChoice{m.pol.RebuySpares, m.pol.RebuyHold}
	}
	key := rebuyKeyOf(o)
	if c, ok := l.choices[key]; ok && c.chosen == l.version && now.Sub(c.at) < 10*time.Minute {
		return c.choice
	}
	from := now.Add(-rebuyWindow(o))
	var kind []BusyPeriod
	for _, p := range f.Jobs {
		if p.Minimum == o.MinimumReservation {
			kind = append(kind, p)
		}
	}
	var jobs []BusyPeriod
	for i, p := range kind {
		if p.Start.After(from) || i >= len(kind)-rebuyPriorJobs {
			jobs = append(jobs, p)
		}
	}
	for id, at := range l.since {
		if r := m.insts[id]; r == nil || !r.Busy {
			delete(l.since, id) // released or gone while busy: no MarkIdle will come
			l.version++
			continue
		}
		if m.insts[id].Instance.Offer.MinimumReservation == o.MinimumReservation {
			jobs = append(jobs, BusyPeriod{Start: at, Used: now.Sub(at), Minimum: o.MinimumReservation, Node: id})
		}
	}
	slices.SortFunc(jobs, func(a, b BusyPeriod) int { return a.Start.Compare(b.Start) })
	if len(jobs) == 0 {
		return rebuyChoice{} // no job of this kind
	}
	k := f.rebuyKind(o.MinimumReservation)
	c := rebuyMemo{choice: bestRebuy(jobs, o, k.FirstJob, k.IdledPastMinimum, now), chosen: l.version, at: now}
	if l.choices == nil {
		l.choices = map[rebuyKey]rebuyMemo{}
	}
	l.choices[key] = c
	return c.choice
}

// held picks, per fleet and kind of offer (rebuyKey; per fleet alone with
// Policy.RebuySpares, which counts a fleet's spares), the idle per-minute
// nodes the re-buy hold keeps — the first ones in Acquire's order
// (handOutOrder: most paid time left, then the cheaper to keep, then the
// oldest), as many as the hold for their offer says — and how long each is
// held past its minimum (no longer than a re-buy of what the fleet's spec
// buys now would waste for a node whose offer it no longer matches:
// outdatedHold). A spare is a node Acquire
// can hand out (spareable), or one on its way back to that after a stop
// out of band while idle (restartingIdle): it keeps its standing while it
// boots again, ranked after the spares that can serve a job now. Nodes
// whose start is unknown are not among them (their minimum's end, which
// the hold counts from, is not known). m.mu held.
func (m *Manager) held(now time.Time) (map[*InstanceRecord]bool, map[*InstanceRecord]time.Duration) {
	type group struct {
		fleet string
		key   rebuyKey
	}
	idle := map[group][]*InstanceRecord{}
	for _, r := range m.insts {
		o := r.Instance.Offer
		if r.Busy || r.Termination != nil || r.CreatedUnknown || o.BillingGranularity >= time.Hour || o.MinimumReservation <= 0 {
			continue
		}
		if !m.restartingIdle(r) && (r.Instance.Status != StatusIdle || !m.spareable(r, now)) {
			continue // a spare no job can be given is no spare (tester AR), but for one coming back from a stop (tester AY)
		}
		g := group{r.Instance.Fleet, rebuyKeyOf(o)}
		if m.pol.RebuySpares > 0 {
			g.key = rebuyKey{} // a fixed hold counts a fleet's spares whatever their offer (tester AN)
		}
		idle[g] = append(idle[g], r)
	}
	for fleet := range m.rebuy {
		if _, ok := m.fleets[fleet]; !ok {
			delete(m.rebuy, fleet) // deleted: its jobs no longer matter
		}
	}
	keep, hold := map[*InstanceRecord]bool{}, map[*InstanceRecord]time.Duration{}
	for g, rs := range idle {
		c := m.rebuyHold(g.fleet, rs[0].Instance.Offer, now) // alike in what the choice depends on
		if c.spares == 0 {
			continue
		}
		slices.SortFunc(rs, func(a, b *InstanceRecord) int {
			if ba, bb := m.restartingIdle(a), m.restartingIdle(b); ba != bb {
				if bb {
					return -1 // a node that can serve a job now first
				}
				return 1
			}
			return m.handOutOrder(a, b, now) // Acquire's own order (tester BG: not one of its own)
		})
		for _, r := range rs[:min(c.spares, len(rs))] {
			keep[r], hold[r] = true, m.outdatedHold(r, c.hold)
		}
	}
	m.yieldHolds(keep, hold, now)
	return keep, hold
}
