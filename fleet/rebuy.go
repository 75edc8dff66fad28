package fleet

import (
	"cmp"
	"slices"
	"time"
)

// rebuyKeep bounds the jobs remembered per fleet for the re-buy hold.
const rebuyKeep = 64

// rebuyLog is a fleet's recent demand (its nodes' busy periods), from
// which the re-buy hold is chosen (see bestRebuy), and the latest choice
// for each kind of offer its nodes have (a fleet whose spec changed may
// have nodes of several).
type rebuyLog struct {
	first   time.Time            // the fleet's first job's start (since the Manager started)
	started int                  // jobs started since then
	done    []busyPeriod         // ended, oldest first
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
// becoming busy or idle. m.mu held.
func (m *Manager) noteBusy(r *InstanceRecord, busy bool, now time.Time) {
	o := r.Instance.Offer
	if o.BillingGranularity >= time.Hour || o.MinimumReservation <= 0 {
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
		if l.first.IsZero() {
			l.first = now
		}
		l.started++
	case !busy && ok:
		delete(l.since, id)
		l.done = append(l.done, busyPeriod{start: at, used: now.Sub(at)})
		if len(l.done) > rebuyKeep {
			l.done = slices.Delete(l.done, 0, len(l.done)-rebuyKeep)
		}
	default:
		return
	}
	l.version++
}

// rebuyLogOf is fleet's rebuyLog, rebuilt from its records' last jobs
// (BusySince, IdleSince) when the Manager has none: after a restart, or on a
// replica that took the fleet over. m.mu held.
func (m *Manager) rebuyLogOf(fleet string) *rebuyLog {
	if l := m.rebuy[fleet]; l != nil {
		return l
	}
	if m.rebuy == nil {
		m.rebuy = map[string]*rebuyLog{}
	}
	l := &rebuyLog{since: map[string]time.Time{}}
	m.rebuy[fleet] = l
	for id, r := range m.insts {
		o, at := r.Instance.Offer, r.BusySince
		if r.Instance.Fleet != fleet || at.IsZero() || o.BillingGranularity >= time.Hour || o.MinimumReservation <= 0 {
			continue
		}
		switch {
		case r.Busy:
			l.since[id] = at
		case r.IdleSince.After(at):
			l.done = append(l.done, busyPeriod{start: at, used: r.IdleSince.Sub(at)})
		default:
			continue
		}
		if l.first.IsZero() || at.Before(l.first) {
			l.first = at
		}
		l.started++
	}
	slices.SortFunc(l.done, func(a, b busyPeriod) int { return a.start.Compare(b.start) })
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
	l := m.rebuyLogOf(fleet)
	if l.fixed != nil {
		return *l.fixed
	}
	if len(l.done) == 0 && len(l.since) == 0 {
		return rebuyChoice{}
	}
	if m.pol.RebuySpares > 0 {
		return rebuyChoice{m.pol.RebuySpares, m.pol.RebuyHold}
	}
	k := rebuyKeyOf(o)
	if c, ok := l.choices[k]; ok && c.chosen == l.version && now.Sub(c.at) < 10*time.Minute {
		return c.choice
	}
	from := now.Add(-rebuyWindow(o))
	var jobs []busyPeriod
	for i, p := range l.done {
		if p.start.After(from) || i >= len(l.done)-rebuyPriorJobs {
			jobs = append(jobs, p)
		}
	}
	for id, at := range l.since {
		if r := m.insts[id]; r == nil || !r.Busy {
			delete(l.since, id) // released or gone while busy: no MarkIdle will come
			l.version++
			continue
		}
		jobs = append(jobs, busyPeriod{start: at, used: now.Sub(at)})
	}
	slices.SortFunc(jobs, func(a, b busyPeriod) int { return cmp.Compare(a.start.UnixNano(), b.start.UnixNano()) })
	c := rebuyMemo{choice: bestRebuy(jobs, o, l.first, l.started, now), chosen: l.version, at: now}
	if l.choices == nil {
		l.choices = map[rebuyKey]rebuyMemo{}
	}
	l.choices[k] = c
	return c.choice
}

// held picks, per fleet and kind of offer (rebuyKey), the idle per-minute
// nodes the re-buy hold keeps — the first ones in Acquire's order (most
// paid time left, then oldest), as many as the hold for their offer says —
// and how long each is held past its minimum. Nodes whose start is unknown
// are not among them (their minimum's end, which the hold counts from, is
// not known). m.mu held.
func (m *Manager) held(now time.Time) (map[*InstanceRecord]bool, map[*InstanceRecord]time.Duration) {
	type group struct {
		fleet string
		key   rebuyKey
	}
	idle := map[group][]*InstanceRecord{}
	for _, r := range m.insts {
		o := r.Instance.Offer
		if r.Instance.Status != StatusIdle || r.Busy || r.Termination != nil || r.CreatedUnknown || o.BillingGranularity >= time.Hour || o.MinimumReservation <= 0 {
			continue
		}
		g := group{r.Instance.Fleet, rebuyKeyOf(o)}
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
			if x := m.paidUntil(b, now).Compare(m.paidUntil(a, now)); x != 0 {
				return x
			}
			if x := a.Instance.Created.Compare(b.Instance.Created); x != 0 {
				return x
			}
			return cmp.Compare(a.Instance.RequestID, b.Instance.RequestID)
		})
		for _, r := range rs[:min(c.spares, len(rs))] {
			keep[r], hold[r] = true, c.hold
		}
	}
	return keep, hold
}
