package costopt

import (
	"math"
	"slices"
)

// rules are the decisions in force at a search node, on jobs indexed in
// trace order: succ[i] = j (and pred[j] = i) means job j must follow job i
// directly on the same machine; a forbidden arc may not; a job that must
// start (end) a machine's chain has no predecessor (successor).
type rules struct {
	succ, pred []int // forced successor / predecessor, -1 if none
	forbid     map[[2]int]bool
	forbidIn   []bool // some arc into the job is forbidden
	first      []bool // must start a chain
	last       []bool // must end a chain
}

func newRules(n int) *rules {
	r := &rules{succ: make([]int, n), pred: make([]int, n), forbid: map[[2]int]bool{},
		forbidIn: make([]bool, n), first: make([]bool, n), last: make([]bool, n)}
	for i := range n {
		r.succ[i], r.pred[i] = -1, -1
	}
	return r
}

func (r *rules) clone() *rules {
	c := &rules{succ: slices.Clone(r.succ), pred: slices.Clone(r.pred), forbid: make(map[[2]int]bool, len(r.forbid)),
		forbidIn: slices.Clone(r.forbidIn), first: slices.Clone(r.first), last: slices.Clone(r.last)}
	for k := range r.forbid {
		c.forbid[k] = true
	}
	return c
}

// arc reports whether job j may directly follow job i.
func (r *rules) arc(i, j int) bool {
	return (r.succ[i] < 0 || r.succ[i] == j) && (r.pred[j] < 0 || r.pred[j] == i) &&
		!r.last[i] && !r.first[j] && !r.forbid[[2]int{i, j}]
}

// open reports whether a job may follow any job that ended before it.
func (r *rules) open(j int) bool { return r.pred[j] < 0 && !r.forbidIn[j] && !r.first[j] }

// free reports whether any job may follow job i.
func (r *rules) free(i int) bool { return r.succ[i] < 0 && !r.last[i] }

// fix makes a chain one machine's whole work.
func (r *rules) fix(c []int) {
	r.first[c[0]], r.last[c[len(c)-1]] = true, true
	for k := 1; k < len(c); k++ {
		r.succ[c[k-1]], r.pred[c[k]] = c[k], c[k-1]
	}
}

// allows reports whether a chain obeys the rules.
func (r *rules) allows(chain []int) bool {
	if r.pred[chain[0]] >= 0 || r.succ[chain[len(chain)-1]] >= 0 {
		return false
	}
	for k := 1; k < len(chain); k++ {
		if !r.arc(chain[k-1], chain[k]) {
			return false
		}
	}
	return true
}

// pricer finds, for a first job, the chain of least reduced cost: cost of
// the chain's machine minus the sum of the duals of its jobs.
type pricer struct {
	jobs  []Job
	b     Billing
	byEnd []int // job indices by end time
	w     []float64
	from  []int
}

func newPricer(jobs []Job, b Billing) *pricer {
	n := len(jobs)
	p := &pricer{jobs: jobs, b: b, byEnd: make([]int, n), w: make([]float64, n), from: make([]int, n)}
	for i := range n {
		p.byEnd[i] = i
	}
	slices.SortStableFunc(p.byEnd, func(x, y int) int { return cmpDur(jobs[x].End(), jobs[y].End()) })
	return p
}

// chainUnits is the units billed for a machine ready at job f's arrival and
// deleted at job l's end.
func (p *pricer) chainUnits(f, l int) int64 {
	return p.b.Units(p.jobs[l].End() - p.jobs[f].Arrive + p.b.BootTime)
}

// best returns the least reduced cost of a chain starting at job f and that
// chain, or +Inf when no chain may start at f. The jobs are visited in
// arrival order; a job's best predecessor is the best chain value among the
// jobs that ended by its arrival, kept as a running maximum (a linear scan
// only where rules restrict the arcs into the job).
func (p *pricer) best(f int, y []float64, r *rules) (float64, []int) {
	if r.pred[f] >= 0 {
		return math.Inf(1), nil
	}
	for i := range p.w {
		p.w[i], p.from[i] = math.Inf(-1), -1
	}
	p.w[f] = y[f]
	var done []int // jobs whose chain value may extend to later ones
	run, runAt, e := math.Inf(-1), -1, 0
	bestRC, bestL := math.Inf(1), -1
	for l := f; l < len(p.jobs); l++ {
		for ; e < len(p.byEnd) && p.jobs[p.byEnd[e]].End() <= p.jobs[l].Arrive; e++ {
			i := p.byEnd[e]
			if i < f || math.IsInf(p.w[i], -1) {
				continue
			}
			done = append(done, i)
			if r.free(i) && p.w[i] > run {
				run, runAt = p.w[i], i
			}
		}
		if l > f {
			p.link(l, y, r, done, run, runAt)
		}
		if r.succ[l] < 0 && !math.IsInf(p.w[l], -1) {
			if rc := float64(p.chainUnits(f, l)) - p.w[l]; rc < bestRC {
				bestRC, bestL = rc, l
			}
		}
	}
	return bestRC, p.trace(bestL)
}

// link sets the chain value of job l from its best allowed predecessor.
func (p *pricer) link(l int, y []float64, r *rules, done []int, run float64, runAt int) {
	if r.open(l) {
		if runAt >= 0 {
			p.w[l], p.from[l] = run+y[l], runAt
		}
		return
	}
	for _, i := range done {
		if r.arc(i, l) && p.w[i]+y[l] > p.w[l] {
			p.w[l], p.from[l] = p.w[i]+y[l], i
		}
	}
}

func (p *pricer) trace(l int) []int {
	if l < 0 {
		return nil
	}
	var chain []int
	for ; l >= 0; l = p.from[l] {
		chain = append(chain, l)
	}
	slices.Reverse(chain)
	return chain
}

func cmpDur[T ~int64](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
