package costopt

import (
	"math"
	"slices"
)

// Optimal is the answer of Optimum: the cheapest plan found, and a lower
// bound that no plan of the model goes below.
type Optimal struct {
	Plan
	// LowerBound is a proven lower bound of the optimal bill, in USD. It
	// equals Plan.Bill() when Proven.
	LowerBound float64
	// Proven reports that Plan is optimal. It is false when the search
	// stopped at its node limit (2000 nodes) or gave up a node on numerical
	// trouble in its linear algebra.
	Proven bool
	// Nodes is the number of linear relaxations solved (the root, the steps
	// of the dive for a first plan, and the branch-and-bound nodes; 1 when
	// the root relaxation was already integral), Columns the number of
	// chains generated.
	Nodes, Columns int
}

// Gap is Bill / LowerBound - 1: zero when Proven.
func (o Optimal) Gap() float64 {
	if o.LowerBound <= 0 {
		return 0
	}
	return o.Bill()/o.LowerBound - 1
}

// nodeLimit bounds the branch-and-bound search. The linear relaxation is
// almost always integral on bursty traces, so the limit is rarely reached.
const nodeLimit = 2000

// Optimum returns a plan of least bill for serving every job of t on
// machines billed by b, where every job starts at its arrival (see the
// package documentation for the model and the method). It returns an error
// when t or b is invalid.
func Optimum(t Trace, b Billing) (Optimal, error) {
	if err := t.Validate(); err != nil {
		return Optimal{}, err
	}
	if err := b.Validate(); err != nil {
		return Optimal{}, err
	}
	s := newSearch(t.Jobs, b)
	lb, proven := s.run()
	plan := s.plan()
	return Optimal{Plan: plan, LowerBound: b.usd(lb), Proven: proven, Nodes: s.nodes,
		Columns: len(s.pool)}, nil
}

// search is the branch-and-price search over chains of jobs (indices in
// trace order).
type search struct {
	jobs      []Job
	b         Billing
	pr        *pricer
	pool      [][]int
	poolUnits []int64
	poolKey   map[string]bool
	best      [][]int // incumbent chains
	bestUnits int64
	nodes     int
	unsure    float64 // least bound of a node given up on numerical trouble
	limit     int     // on nodes
	diving    bool    // dive for an incumbent after the root
}

func newSearch(jobs []Job, b Billing) *search {
	s := &search{jobs: jobs, b: b, pr: newPricer(jobs, b), poolKey: map[string]bool{}, unsure: math.Inf(1),
		limit: nodeLimit, diving: true}
	s.best = improve(jobs, s.pr, greedy(jobs, s.pr))
	s.bestUnits = s.units(s.best)
	for _, c := range s.best {
		s.addPool(c)
	}
	return s
}

func (s *search) units(chains [][]int) int64 {
	var u int64
	for _, c := range chains {
		u += s.pr.chainUnits(c[0], c[len(c)-1])
	}
	return u
}

// addPool stores a chain once and returns its index and whether it is new.
func (s *search) addPool(c []int) (int, bool) {
	key := chainKey(c)
	if s.poolKey[key] {
		return -1, false
	}
	s.poolKey[key] = true
	s.pool = append(s.pool, c)
	s.poolUnits = append(s.poolUnits, s.pr.chainUnits(c[0], c[len(c)-1]))
	return len(s.pool) - 1, true
}

// chainKey identifies a chain (job indices below 2^24).
func chainKey(c []int) string {
	b := make([]byte, 0, 3*len(c))
	for _, j := range c {
		b = append(b, byte(j), byte(j>>8), byte(j>>16))
	}
	return string(b)
}

type node struct {
	r     *rules
	bound float64 // lower bound in units (the parent's)
	from  warm    // the parent's final duals and basis
}

// run solves the root relaxation, dives for a good incumbent, then
// explores the search tree depth first. It returns a lower bound in units
// and whether the incumbent is proven optimal.
func (s *search) run() (float64, bool) {
	if len(s.jobs) == 0 {
		return 0, true
	}
	root := node{newRules(len(s.jobs)), math.Inf(-1), warm{center: s.workDuals()}}
	res := s.relax(root.r, root.from)
	s.nodes++
	if s.diving {
		s.dive(root.r, res)
	}
	stack := s.children(root, res)
	for len(stack) > 0 {
		if s.nodes >= s.limit {
			return s.openBound(stack), false
		}
		nd := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s.pruned(nd.bound) {
			continue
		}
		s.nodes++
		stack = append(stack, s.children(nd, s.relax(nd.r, nd.from))...)
	}
	if s.unsure < float64(s.bestUnits) {
		return s.unsure, false
	}
	return float64(s.bestUnits), true
}

// dive fixes the chains the relaxation already uses in full (or else its
// heaviest chain) and solves again, until the relaxation is integral or
// cannot beat the incumbent: a quick incumbent for the search.
func (s *search) dive(r *rules, res relaxation) {
	for !res.failed && !s.pruned(res.bound) {
		if _, _, _, frac := branchArc(res.chains, res.weights); !frac {
			s.offer(res.integral())
			return
		}
		r = r.clone()
		heavy := -1
		for k, w := range res.weights {
			c := res.chains[k]
			if r.first[c[0]] && r.last[c[len(c)-1]] {
				continue // fixed already
			}
			if w > 0.75 {
				r.fix(c)
			}
			if heavy < 0 || w > res.weights[heavy] {
				heavy = k
			}
		}
		if res.weights[heavy] <= 0.75 {
			r.fix(res.chains[heavy])
		}
		res = s.relax(r, res.warm)
		s.nodes++
	}
}

// openBound is the least bound among the open nodes and the incumbent.
func (s *search) openBound(stack []node) float64 {
	lb := min(float64(s.bestUnits), s.unsure)
	for _, nd := range stack {
		lb = min(lb, nd.bound)
	}
	return max(lb, 0)
}

// pruned reports whether a node with this bound cannot beat the incumbent
// (bills are whole units).
func (s *search) pruned(bound float64) bool {
	return math.Ceil(bound-1e-6) >= float64(s.bestUnits)
}

// children returns the subproblems of a solved node (the one to explore
// first last): none when the node is pruned or integral.
func (s *search) children(nd node, res relaxation) []node {
	bound := max(nd.bound, res.bound)
	if s.pruned(bound) {
		return nil
	}
	if res.failed {
		s.unsure = min(s.unsure, bound)
		return nil
	}
	i, j, flow, ok := branchArc(res.chains, res.weights)
	if !ok {
		s.offer(res.integral())
		return nil
	}
	force, forbid := nd.r.clone(), nd.r.clone()
	force.succ[i], force.pred[j] = j, i
	forbid.forbid[[2]int{i, j}], forbid.forbidIn[j] = true, true
	if flow >= 0.5 {
		return []node{{forbid, bound, res.warm}, {force, bound, res.warm}}
	}
	return []node{{force, bound, res.warm}, {forbid, bound, res.warm}}
}

// offer takes an integral solution as the incumbent if it is cheaper. A
// solution that is not a partition of the jobs (rounding gone wrong) is
// ignored.
func (s *search) offer(chains [][]int) {
	seen := make([]bool, len(s.jobs))
	n := 0
	for _, c := range chains {
		for _, j := range c {
			if seen[j] {
				return
			}
			seen[j], n = true, n+1
		}
	}
	if n != len(s.jobs) {
		return
	}
	if u := s.units(chains); u < s.bestUnits {
		s.best, s.bestUnits = chains, u
	}
}

// plan turns the incumbent into machines: each created a boot time before
// its first job arrives and deleted when its last job ends.
func (s *search) plan() Plan {
	p := Plan{Billing: s.b}
	for _, c := range s.best {
		first, last := s.jobs[c[0]], s.jobs[c[len(c)-1]]
		m := Machine{Created: first.Arrive - s.b.BootTime, Deleted: last.End()}
		for _, j := range c {
			m.Runs = append(m.Runs, Run{Job: s.jobs[j].ID, Start: s.jobs[j].Arrive})
		}
		p.Machines = append(p.Machines, m)
	}
	slices.SortStableFunc(p.Machines, func(x, y Machine) int { return cmpDur(x.Created, y.Created) })
	return p
}
