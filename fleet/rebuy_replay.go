package fleet

import (
	"slices"
	"time"
)

// rebuyChoice is one candidate re-buy hold: how many idle nodes are held
// past their minimum reservation, and for how long.
type rebuyChoice struct {
	spares int
	hold   time.Duration
}

// rebuyChoices are the holds the replay compares, for a minimum
// reservation: no hold, or 1, 2, 3, 5 or 8 nodes held an eighth, a quarter,
// a half or the whole of the minimum.
func rebuyChoices(minimum time.Duration) []rebuyChoice {
	out := []rebuyChoice{{}}
	for _, k := range []int{1, 2, 3, 5, 8} {
		for _, div := range []time.Duration{8, 4, 2, 1} {
			out = append(out, rebuyChoice{k, minimum / div})
		}
	}
	return out
}

// busyPeriod is one recorded job of a fleet: a node busy from start for
// used (ongoing ones end now).
type busyPeriod struct {
	start time.Time
	used  time.Duration
}

// rebuyPriorSpan: until a fleet's jobs span this many minimum reservations
// from its first job (not the first replayed: a fleet quiet for a while
// does not start over), the replay has seen at most half a minimum of
// releases and re-buys, too little to judge a hold by; and while the fleet
// has had a single job it has seen no gap at all. Until then the break-even
// hold (rebuyPrior) is the one to beat, so that a node freed by a job is not
// released just before the next job buys a new minimum (the named
// cause).
const rebuyPriorSpan = 1.5

// rebuyPriorJobs: the replay covers at least a fleet's last this many jobs,
// however long ago (a sparse fleet's gaps are its evidence).
const rebuyPriorJobs = 4

// rebuyPrior is the ski-rental break-even hold: idle nodes kept one whole
// minimum past their own, up to 8 of them, or as many as the most jobs
// that ran at once in the hour before the latest job ended (peakJobs; a
// fleet whose every node works in waves keeps them all between waves, even
// when the gap is longer than an hour). For each node held it never pays
// more than twice what the best choice knowing the future would for the
// same period (the hold costs at most the minimum a re-buy would have cost).
func rebuyPrior(o Offer, jobs []busyPeriod) rebuyChoice {
	var last time.Time
	for _, j := range jobs {
		last = maxTime(last, j.start.Add(j.used))
	}
	var recent []busyPeriod
	for _, j := range jobs {
		if last.Sub(j.start.Add(j.used)) < time.Hour {
			recent = append(recent, j)
		}
	}
	return rebuyChoice{max(8, peakJobs(recent)), o.MinimumReservation}
}

// peakJobs is the most jobs running at once (a job ending as another
// starts is not counted with it).
func peakJobs(jobs []busyPeriod) int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(jobs))
	for _, j := range jobs {
		edges = append(edges, edge{j.start, 1}, edge{j.start.Add(j.used), -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // ends first
	})
	n, peak := 0, 0
	for _, e := range edges {
		n += e.delta
		peak = max(peak, n)
	}
	return peak
}

// bestRebuy replays the fleet's recent jobs under each candidate hold and
// returns the one that would have cost least (fewest billed minutes; ties to
// the smaller hold) — unless it would not have saved at least one minimum
// reservation (a replacement) over the default: no hold, or the break-even
// hold (rebuyPrior) while the fleet is young or has had a single job
// (rebuyPriorSpan; first is the fleet's first job's start, started the jobs
// since).
// The replay: each job takes an idle node in Acquire's order (most paid
// time left, then oldest) or a new one created its boot time before; an
// idle node past its minimum is kept while it is among the first spares
// idle nodes in that order (those inside their minimum, paid anyway, come
// first: at most spares nodes wait idle) and its hold lasts, and released
// otherwise. A hold still under way now is not charged past the node's
// minimum or last job (whether it pays off is not known yet): a choice is
// judged by what the past proved.
func bestRebuy(jobs []busyPeriod, o Offer, first time.Time, started int, now time.Time) rebuyChoice {
	def := rebuyChoice{}
	young := float64(now.Sub(first)) < rebuyPriorSpan*float64(o.MinimumReservation)
	if len(jobs) > 0 && (young || started <= 1) {
		def = rebuyPrior(o, jobs)
	}
	best, bestCost := def, replayRebuy(jobs, o, def, now)-o.MinimumReservation
	for _, c := range rebuyChoices(o.MinimumReservation) {
		if c == def {
			continue
		}
		if cost := replayRebuy(jobs, o, c, now); cost <= bestCost && (best == def || cost < bestCost) {
			best, bestCost = c, cost
		}
	}
	return best
}

type replayNode struct {
	created, free, gone time.Time // gone zero while kept
}

// replayRebuy is the billed time of the fleet's recent jobs under hold c,
// counted up to now, a node still held now only to its base (its minimum's
// end or its last job's, the later).
func replayRebuy(jobs []busyPeriod, o Offer, c rebuyChoice, now time.Time) time.Duration {
	var nodes []*replayNode
	for _, j := range jobs {
		n := pickReplayed(nodes, o, c, j.start)
		if n == nil {
			n = &replayNode{created: j.start.Add(-o.TypicalBoot)}
			nodes = append(nodes, n)
		}
		n.free = j.start.Add(j.used)
	}
	pickReplayed(nodes, o, c, now) // settles releases up to now
	var total time.Duration
	for _, n := range nodes {
		end := n.gone
		if end.IsZero() { // kept: busy, inside its minimum, or held (charged to its base)
			end = minTime(now, maxTime(n.created.Add(o.MinimumReservation), n.free))
		}
		total += max(o.MinimumReservation, end.Sub(n.created))
	}
	return total
}

// pickReplayed releases the nodes whose time is up at t and returns the
// idle node a job arriving at t takes, or nil.
func pickReplayed(nodes []*replayNode, o Offer, c rebuyChoice, t time.Time) *replayNode {
	var idle []*replayNode
	for _, n := range nodes {
		if n.gone.IsZero() && !n.free.After(t) {
			idle = append(idle, n)
		}
	}
	paid := func(n *replayNode) time.Time { return maxTime(t, n.created.Add(o.MinimumReservation)) }
	slices.SortFunc(idle, func(a, b *replayNode) int {
		if x := paid(b).Compare(paid(a)); x != 0 {
			return x
		}
		return a.created.Compare(b.created)
	})
	var take *replayNode
	rank := 0
	for _, n := range idle {
		base := maxTime(n.created.Add(o.MinimumReservation), n.free)
		switch {
		case base.After(t): // inside its minimum: kept, and it counts among the spares
			rank++
		case rank < c.spares && base.Add(c.hold).After(t):
			rank++
		case rank < c.spares:
			n.gone = base.Add(c.hold)
			continue
		default:
			n.gone = base
			continue
		}
		if take == nil {
			take = n
		}
	}
	return take
}
