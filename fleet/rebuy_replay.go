package fleet

import (
	"cmp"
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

// rebuyPriorSpan: until a fleet's jobs span this many minimum reservations
// from its first job (not the first replayed: a fleet quiet for a while
// does not start over), the replay has seen at most half a minimum of
// releases and re-buys, too little to judge a hold by, and the break-even
// hold (rebuyPrior) is the one to beat, so that a node freed by a job is not
// released just before the next job buys a new minimum (the named
// cause).
const rebuyPriorSpan = 1.5

// rebuyPriorJobs: the replay covers at least a fleet's last this many jobs,
// however long ago (a sparse fleet's gaps are its evidence).
const rebuyPriorJobs = 4

// rebuyPrior is the ski-rental break-even hold: idle nodes kept as long as
// a re-buy would waste — the whole minimum, or, once rebuyPriorJobs jobs
// have ended (or run past a minimum), the minimum less the mean time a new
// rental uses of it (rentalUse: its boot, billed inside the minimum, is
// never used, so a re-buy wastes at least its boot, however long the jobs;
// and a node that runs jobs back to back uses its whole minimum, however
// short each job) — as many as the most of jobs
// that ran at once, up to 8 (never more than the jobs have needed: nodes
// bought while jobs waited for a boot are not all held; tester AC), or as
// many as ran at once among the jobs under way and those that ended in the
// hour before the latest one ended when more (peakJobs; a fleet whose every
// node works in waves keeps them all between waves, even when the gap is
// longer than an hour and the next wave has begun). For each node held, an
// idle period that ends with a job never costs more than twice what the
// best choice knowing the future would (hold it, or release at once and
// re-buy), when a re-buy wastes what the past ones would have (the hold
// costs at most what a re-buy wastes, and a re-buy at least its boot);
// one that ends with no job costs the hold. Jobs under way end at now.
func rebuyPrior(o Offer, jobs []BusyPeriod, now time.Time) rebuyChoice {
	var last time.Time
	for _, j := range jobs {
		if end := j.Start.Add(j.Used); end.Before(now) {
			last = maxTime(last, end)
		}
	}
	var recent []BusyPeriod
	for _, j := range jobs {
		if end := j.Start.Add(j.Used); !end.Before(now) || last.Sub(end) < time.Hour {
			recent = append(recent, j)
		}
	}
	hold := o.MinimumReservation
	if used, n := rentalUse(jobs, o, now); n >= rebuyPriorJobs {
		hold = (o.MinimumReservation - used).Round(time.Minute)
	}
	return rebuyChoice{max(min(8, peakJobs(jobs)), peakJobs(recent), 1), hold}
}

// rentalUse estimates how much of a new rental's minimum reservation (m,
// offer o) its jobs use, from the fleet's jobs. A rental bought for a job
// boots first (o.TypicalBoot, billed inside the minimum), then serves that
// job and the jobs that follow on its node: its use is their busy time in
// the rest of the minimum, m − boot from the job's start, at most. The
// samples are the runs of jobs on one node (BusyPeriod.Node) that a re-buy
// could have started: a node's first job, and each job that came more than
// rebuyRunGap (or the boot when longer) after the node's previous one
// ended; a gap that short is held whatever the hold (a re-buy wastes its
// boot at least), so a run of jobs back to back, however short each, is
// one sample that may use the whole minimum. A job with no Node is a run
// of its own. The run under way on a node (its job under way, its window
// not over) is known to use at least what it has: the estimate is the
// area under the Kaplan–Meier survival curve up to m − boot, those runs
// censored where they stand (ties: the ended first); every other run
// counts what it has used so far, as an ended job did (its node idle, or
// on a later run: a short history, FleetRecord.Jobs, biases the estimate
// to holding longer, not shorter).
// n is how many jobs ended or ran past m (evidence enough to go by:
// rebuyPriorJobs).
func rentalUse(jobs []BusyPeriod, o Offer, now time.Time) (mean time.Duration, n int) {
	m := o.MinimumReservation
	window := max(0, m-o.TypicalBoot)
	gap := max(rebuyRunGap, o.TypicalBoot)
	for _, j := range jobs {
		if j.Start.Add(j.Used).Before(now) || j.Used >= m {
			n++
		}
	}
	byNode := map[string][]BusyPeriod{}
	var alone [][]BusyPeriod
	for _, j := range jobs {
		if j.Node == "" {
			alone = append(alone, []BusyPeriod{j})
		} else {
			byNode[j.Node] = append(byNode[j.Node], j)
		}
	}
	type sample struct {
		at    time.Duration
		ended bool
		start time.Time
	}
	var ss []sample
	for _, node := range byNode {
		slices.SortFunc(node, func(a, b BusyPeriod) int { return a.Start.Compare(b.Start) })
		var free time.Time // when the node's previous job ended
		for i, j := range node {
			if i > 0 && !j.Start.After(free.Add(gap)) {
				free = maxTime(free, j.Start.Add(j.Used))
				continue // the same run
			}
			free = maxTime(free, j.Start.Add(j.Used))
			end := j.Start.Add(window)
			var used time.Duration
			for _, k := range node[i:] {
				used += max(0, minTime(end, k.Start.Add(k.Used)).Sub(maxTime(j.Start, k.Start)))
			}
			ss = append(ss, sample{min(used, window), used < window, j.Start})
		}
		if last, s := node[len(node)-1], &ss[len(ss)-1]; !last.Start.Add(last.Used).Before(now) && s.start.Add(window).After(now) {
			s.ended = false // the run under way, inside its window: censored
		}
	}
	for _, a := range alone {
		j := a[0]
		ss = append(ss, sample{min(j.Used, window), j.Used < window && j.Start.Add(j.Used).Before(now), j.Start})
	}
	if len(ss) == 0 {
		return window, n
	}
	slices.SortFunc(ss, func(a, b sample) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		switch {
		case a.ended == b.ended:
			return 0
		case a.ended:
			return -1 // ended first: one censored there survives it
		}
		return 1
	})
	surv, last := 1.0, time.Duration(0)
	var area float64
	for i, s := range ss {
		area += surv * float64(s.at-last)
		last = s.at
		if s.ended {
			surv *= 1 - 1/float64(len(ss)-i)
		}
	}
	area += surv * float64(window-last)
	return time.Duration(area), n
}

// rebuyRunGap: jobs on one node this close (or within its boot, when
// longer) are one run of a rental (rentalUse): an orchestrator's next job
// takes a moment to ask.
const rebuyRunGap = time.Minute

// peakJobs is the most jobs running at once (a job ending as another
// starts is not counted with it).
func peakJobs(jobs []BusyPeriod) int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(jobs))
	for _, j := range jobs {
		edges = append(edges, edge{j.Start, 1}, edge{j.Start.Add(j.Used), -1})
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
// hold (rebuyPrior) while the fleet is young (rebuyPriorSpan; first is its
// first job's start) or no node has been released after idling past its
// minimum yet (idled: FleetRecord.IdledPastMinimum; jobs handed from node
// to node, a single batch, holds that all paid off): until then holding has
// cost nothing. The break-even hold is a candidate too (it may keep more
// than 8 nodes).
// The replay: each job takes an idle node in Acquire's order (most paid
// time left, then oldest) or a new one created its boot time before; an
// idle node past its minimum is kept while it is among the first spares
// idle nodes in that order (those inside their minimum, paid anyway, come
// first: at most spares nodes wait idle) and its hold lasts, and released
// otherwise. A hold still under way now is not charged past the node's
// minimum or last job (whether it pays off is not known yet): a choice is
// judged by what the past proved.
func bestRebuy(jobs []BusyPeriod, o Offer, first time.Time, idled bool, now time.Time) rebuyChoice {
	def, prior := rebuyChoice{}, rebuyPrior(o, jobs, now)
	young := float64(now.Sub(first)) < rebuyPriorSpan*float64(o.MinimumReservation)
	if len(jobs) > 0 && (young || !idled) {
		def = prior
	}
	best, bestCost := def, replayRebuy(jobs, o, def, now)-o.MinimumReservation
	for _, c := range append(rebuyChoices(o.MinimumReservation), prior) {
		if c == def {
			continue
		}
		if cost := replayRebuy(jobs, o, c, now); cost <= bestCost && (best == def || cost < bestCost) {
			best, bestCost = c, cost
		}
	}
	return best
}

// rebuyGap: a node released after idling this long past its minimum
// reservation shows that holding can cost (FleetRecord.IdledPastMinimum).
const rebuyGap = time.Minute

type replayNode struct {
	created, free, gone time.Time // gone zero while kept
}

// replayRebuy is the billed time of the fleet's recent jobs under hold c,
// counted up to now, a node still held now only to its base (its minimum's
// end or its last job's, the later).
func replayRebuy(jobs []BusyPeriod, o Offer, c rebuyChoice, now time.Time) time.Duration {
	var nodes []*replayNode
	for _, j := range jobs {
		n := pickReplayed(nodes, o, c, j.Start)
		if n == nil {
			n = &replayNode{created: j.Start.Add(-o.TypicalBoot)}
			nodes = append(nodes, n)
		}
		n.free = j.Start.Add(j.Used)
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
