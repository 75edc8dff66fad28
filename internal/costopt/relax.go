package costopt

import (
	"math"
	"slices"
)

// relaxation is the solved linear relaxation of a node: its lower bound in
// units, the chains with positive weight, and where its children start.
type relaxation struct {
	bound   float64
	chains  [][]int
	weights []float64
	warm    warm
	failed  bool // numerical trouble: the bound holds, the chains do not
}

// warm is where a relaxation starts: the box center (duals) and a basis, as
// box column indices -1-q or pool indices of chains (nil: the box basis).
type warm struct {
	center []float64
	basis  []int
}

// relax solves the linear relaxation of a node by column generation, the
// duals held in a box around center (box-step stabilization): solve the
// master problem over the known chains, price new chains with its duals,
// add those of negative reduced cost; when none is left and the box binds,
// move the box to the duals and go on. Every pricing gives the Lagrangian
// bound sum(duals) + sum over first jobs of min(0, least reduced cost),
// valid for any duals because each job starts at most one chain; at the end
// it equals the relaxation's value.
func (s *search) relax(r *rules, from warm) relaxation {
	width := boxWidth(from.center)
	lp, cols := s.master(r, from, width)
	res := relaxation{bound: math.Inf(-1)}
	moved := false
	for {
		if err := lp.solve(); err != nil {
			res.failed = true
			return res
		}
		lag, fresh := s.price(lp.y, r)
		res.bound = max(res.bound, lag)
		if s.pruned(res.bound) {
			return res
		}
		if s.extend(lp, &cols, fresh) {
			moved = false
			continue
		}
		if !lp.boxBinds() {
			break
		}
		if moved { // the box moved last round too: take longer steps
			for j := range width {
				width[j] *= 2
			}
		}
		lp.setBox(lp.y, width)
		moved = true
	}
	if lp.barredWeight() {
		res.failed = true
		return res
	}
	res.warm = warm{center: slices.Clone(lp.y), basis: encodeBasis(lp, cols)}
	w := lp.weights()
	for q := 2 * lp.m; q < len(lp.cols); q++ {
		if v := w[q]; v > 1e-7 {
			res.chains = append(res.chains, s.pool[cols[q-2*lp.m]])
			res.weights = append(res.weights, v)
		}
	}
	return res
}

// extend adds the chains the master lacks and reports whether there were
// any (a chain it has already prices out only by rounding).
func (s *search) extend(lp *master, cols *[]int, fresh [][]int) bool {
	added := false
	for _, c := range fresh {
		if k, ok := s.addPool(c); ok {
			*cols = append(*cols, k)
			lp.add(c, 1, float64(s.poolUnits[k]))
			added = true
		}
	}
	return added
}

// boxWidth is the half-width of the dual box around center.
func boxWidth(center []float64) []float64 {
	w := make([]float64, len(center))
	for j, c := range center {
		w[j] = 0.5*math.Abs(c) + 1
	}
	return w
}

// master builds the master problem of a node from the pool chains its rules
// allow (the forced sequences are added to the pool first, so that the
// node's problem has a solution without box columns) and starts it from the
// warm basis, whose chains the rules forbid stay in, barred (priced out of
// the optimum), until they leave. It returns the problem and the pool index of each chain
// column.
func (s *search) master(r *rules, from warm, width []float64) (*master, []int) {
	lp := newMaster(from.center, width)
	for i := range s.jobs {
		if r.pred[i] < 0 {
			s.addPool(forcedFrom(i, r))
		}
	}
	var cols []int
	at := make(map[int]int, len(s.pool))
	for k, c := range s.pool {
		if r.allows(c) {
			at[k] = lp.add(c, 1, float64(s.poolUnits[k]))
			cols = append(cols, k)
		}
	}
	if from.basis == nil {
		return lp, cols
	}
	basis := make([]int, len(from.basis))
	for i, e := range from.basis {
		q, ok := at[e]
		switch {
		case e < 0:
			q = -1 - e
		case !ok:
			q = lp.bar(s.pool[e])
			cols = append(cols, e)
		}
		basis[i] = q
	}
	lp.setBox(from.center, width)
	lp.restart(basis)
	return lp, cols
}

// encodeBasis returns the basis of lp as box column indices -1-q and pool
// indices.
func encodeBasis(lp *master, cols []int) []int {
	out := make([]int, len(lp.basis))
	for i, q := range lp.basis {
		if lp.box(q) {
			out[i] = -1 - q
		} else {
			out[i] = cols[q-2*lp.m]
		}
	}
	return out
}

// forcedFrom is the sequence of forced successors from job i.
func forcedFrom(i int, r *rules) []int {
	c := []int{i}
	for j := r.succ[i]; j >= 0; j = r.succ[j] {
		c = append(c, j)
	}
	return c
}

// price returns the Lagrangian bound for duals y and the chains of negative
// reduced cost, at most one per first job.
func (s *search) price(y []float64, r *rules) (float64, [][]int) {
	lag := 0.0
	for _, v := range y {
		lag += v
	}
	tol := 2 * lpTol * (1 + math.Abs(lag)) // such chains enter the master
	var fresh [][]int
	for f := range s.jobs {
		rc, c := s.pr.best(f, y, r)
		if math.IsInf(rc, 1) {
			continue
		}
		lag += min(0, rc)
		if rc < -tol {
			fresh = append(fresh, c)
		}
	}
	return lag, fresh
}

// integral returns the chains of an integral relaxation.
func (res relaxation) integral() [][]int {
	var out [][]int
	for k, c := range res.chains {
		if res.weights[k] > 0.5 {
			out = append(out, c)
		}
	}
	return out
}

// branchArc returns the most fractional arc (job i directly followed by job
// j) of the weighted chains and its flow, or ok=false when every arc flow
// is integral (then the chains with weight above one half are a partition).
func branchArc(chains [][]int, weights []float64) (i, j int, flow float64, ok bool) {
	flows := map[[2]int]float64{}
	for k, c := range chains {
		for x := 1; x < len(c); x++ {
			flows[[2]int{c[x-1], c[x]}] += weights[k]
		}
	}
	arcs := make([][2]int, 0, len(flows))
	for a := range flows {
		arcs = append(arcs, a)
	}
	slices.SortFunc(arcs, func(x, y [2]int) int {
		if x[0] != y[0] {
			return x[0] - y[0]
		}
		return x[1] - y[1]
	})
	best := 1e-6
	for _, a := range arcs {
		f := flows[a]
		if d := min(f, 1-f); d > best {
			best, i, j, flow, ok = d, a[0], a[1], f, true
		}
	}
	return i, j, flow, ok
}

// workDuals are duals every chain prices out at zero or more: a job's
// duration in units (a machine is billed at least for the time its jobs
// run). They start the stabilization center.
func (s *search) workDuals() []float64 {
	y := make([]float64, len(s.jobs))
	for j, job := range s.jobs {
		y[j] = float64(job.Duration) / float64(s.b.Unit)
	}
	return y
}
