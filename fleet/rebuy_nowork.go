package fleet

import (
	"slices"
	"time"
)

// rebuyNoWork: a busy period shorter than this (Acquire then GiveBack, or
// MarkBusy then MarkIdle) did no work the re-buy hold can count on: a job
// cancelled once its node was handed out, or a placement an orchestrator
// took back, gives its node back in milliseconds to seconds. It is not a
// job: not in FleetRecord.Jobs, and the hold does not start from it
// (RebuyKind.FirstJob).
const rebuyNoWork = time.Minute

// noWork forgets a busy period of a node of minimum reservation minimum
// that started at start and did no work (rebuyNoWork): when it set the
// kind's FirstJob (the first busy mark of the kind), FirstJob is the start
// of the earliest job of the kind left, recorded or under way (l; zero if
// none, and the kind is dropped when nothing else is known of it), as if
// the hand-out had never been. m.mu held.
func (m *Manager) noWork(f *FleetRecord, l *rebuyLog, minimum time.Duration, start time.Time) {
	i := slices.IndexFunc(f.RebuyKinds, func(k RebuyKind) bool { return k.Minimum == minimum })
	if i < 0 || !f.RebuyKinds[i].FirstJob.Equal(start) {
		return // the first job of the kind was an earlier one (or the kind is unknown)
	}
	var first time.Time
	earliest := func(t time.Time) {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	for _, p := range f.Jobs {
		if p.Minimum == minimum {
			earliest(p.Start)
		}
	}
	for id, at := range l.since {
		if r := m.insts[id]; r != nil && r.Instance.Offer.MinimumReservation == minimum {
			earliest(at)
		}
	}
	f.RebuyKinds[i].FirstJob = first
	if first.IsZero() && !f.RebuyKinds[i].IdledPastMinimum {
		f.RebuyKinds = slices.Delete(f.RebuyKinds, i, i+1)
	}
	m.dirtyF[f.Spec.Name] = true
}
