package costopt

import (
	"errors"
	"math"
	"slices"
)

// master is a restricted master problem in box-step form: choose
// nonnegative weights x for columns so that every row is covered exactly
// once, at least cost. Chain columns cover their jobs' rows with +1. Two box
// columns per row, +e_j at cost center_j+width_j and -e_j at cost
// -(center_j-width_j), keep the duals y_j inside [center-width,
// center+width]; they also make every master problem feasible, even with
// the right-hand side perturbed slightly (distinct values just above 1) to
// avoid degenerate pivots; the weights reported are those of the
// unperturbed problem in the final basis. Columns the
// node's rules forbid may stay in a warm basis, barred: priced above any sum
// of duals inside the box, so that they leave. It is solved
// by the revised simplex method with an explicit basis inverse; Bland's rule
// takes over during long runs of degenerate pivots, so it cannot cycle.
type master struct {
	m       int
	cols    [][]int
	sign    []float64
	cost    []float64
	basis   []int     // column in each basis position
	inBasis []bool    // by column
	binv    []float64 // m×m, row-major
	rhs     []float64 // 1 per row, perturbed by less than perturbMax
	x       []float64 // value of each basis position
	y       []float64 // duals, one per row
	barred  []int     // columns the node's rules forbid, kept from a warm basis
	u       []float64 // scratch: the entering column in the basis
	pivots  int
	bland   bool // smallest-index rule, to leave a degenerate cycle
	degen   int
}

var errStalled = errors.New("costopt: simplex stalled")

const (
	maxPivots  = 100000 // per solve: a safety net against numerical cycling
	perturbMax = 1e-6   // of the right-hand side, against degenerate pivots
	lpTol      = 1e-9   // reduced costs, relative to the objective
	tinyPivot  = 1e-9   // pivot elements below are taken for zero
	harrisTol  = 1e-9   // primal infeasibility the ratio test tolerates
	refactorAt = 256
	blandAfter = 32
)

// newMaster returns a master with only the box columns around center, the
// plus-columns basic.
func newMaster(center, width []float64) *master {
	m := len(center)
	lp := &master{m: m, basis: make([]int, m), x: make([]float64, m), y: make([]float64, m),
		binv: make([]float64, m*m), rhs: make([]float64, m)}
	for r := range m { // distinct, deterministic
		lp.rhs[r] = 1 + perturbMax*(0.5+0.5*float64(uint32(r)*2654435761%4096)/4096)
	}
	for r := range m {
		lp.add([]int{r}, 1, 0)
	}
	for r := range m {
		lp.add([]int{r}, -1, 0)
	}
	lp.setBox(center, width)
	for r := range m {
		lp.basis[r], lp.inBasis[r] = r, true
		lp.binv[r*m+r], lp.x[r] = 1, lp.rhs[r]
	}
	return lp
}

// box reports whether column q is a box column.
func (lp *master) box(q int) bool { return q < 2*lp.m }

// setBox moves the box to center ± width and prices barred columns above
// any sum of duals the box allows, so that none keeps weight at the optimum.
func (lp *master) setBox(center, width []float64) {
	bar := 1.0
	for r := range lp.m {
		lp.cost[r] = center[r] + width[r]
		lp.cost[lp.m+r] = -(center[r] - width[r])
		bar += 2 * (math.Abs(center[r]) + width[r])
	}
	for _, q := range lp.barred {
		lp.cost[q] = bar
	}
}

// bar adds a column the node's rules forbid; setBox prices it.
func (lp *master) bar(rows []int) int {
	q := lp.add(rows, 1, 0)
	lp.barred = append(lp.barred, q)
	return q
}

// add appends a column and returns its index.
func (lp *master) add(rows []int, sign, cost float64) int {
	lp.cols = append(lp.cols, rows)
	lp.sign = append(lp.sign, sign)
	lp.cost = append(lp.cost, cost)
	lp.inBasis = append(lp.inBasis, false)
	return len(lp.cols) - 1
}

// solve runs simplex pivots until no column prices out.
func (lp *master) solve() error {
	lp.duals()
	for n := 0; ; n++ {
		if n > maxPivots {
			return errStalled
		}
		q, d := lp.entering()
		if q < 0 {
			return nil
		}
		if err := lp.pivot(q, d); err != nil {
			return err
		}
	}
}

// duals sets y = c_B B^-1.
func (lp *master) duals() {
	clear(lp.y)
	for r, q := range lp.basis {
		c := lp.cost[q]
		if c == 0 {
			continue
		}
		row := lp.binv[r*lp.m : (r+1)*lp.m]
		for j, v := range row {
			lp.y[j] += c * v
		}
	}
}

// reduced is the reduced cost of column q.
func (lp *master) reduced(q int) float64 {
	s := 0.0
	for _, r := range lp.cols[q] {
		s += lp.y[r]
	}
	return lp.cost[q] - lp.sign[q]*s
}

// entering returns the column to enter the basis and its reduced cost, or
// -1 at optimality: the most negative reduced cost, or the first negative
// one in Bland mode.
func (lp *master) entering() (int, float64) {
	best, bestD := -1, -lpTol*(1+math.Abs(lp.objective()))
	for q := range lp.cols {
		if lp.inBasis[q] {
			continue
		}
		if d := lp.reduced(q); d < bestD {
			best, bestD = q, d
			if lp.bland {
				break
			}
		}
	}
	return best, bestD
}

func (lp *master) objective() float64 {
	z := 0.0
	for r, q := range lp.basis {
		z += lp.cost[q] * lp.x[r]
	}
	return z
}

// pivot brings column q, of reduced cost d, into the basis.
func (lp *master) pivot(q int, d float64) error {
	u := lp.direction(q)
	p := lp.leaving(u)
	if p < 0 {
		return errors.New("costopt: unbounded master problem")
	}
	theta := max(lp.x[p]/u[p], 0)
	for r := range lp.x {
		lp.x[r] = snap(lp.x[r] - theta*u[r]) // Harris: at most harrisTol below
	}
	lp.x[p] = snap(theta)
	lp.track(theta)
	f := d / u[p] // the duals move along the leaving row of the old inverse
	for j, v := range lp.binv[p*lp.m : (p+1)*lp.m] {
		lp.y[j] += f * v
	}
	lp.swap(p, q, u)
	if lp.pivots++; lp.pivots%refactorAt == 0 {
		if err := lp.refactor(); err != nil {
			return err
		}
		lp.duals()
	}
	return nil
}

// track switches to Bland's rule after a run of degenerate pivots (steps
// of zero: weights are snapped) and back after progress.
func (lp *master) track(theta float64) {
	if theta > 0 {
		lp.degen, lp.bland = 0, false
		return
	}
	if lp.degen++; lp.degen > blandAfter {
		lp.bland = true
	}
}

// direction is B^-1 a_q.
func (lp *master) direction(q int) []float64 {
	if len(lp.u) != lp.m {
		lp.u = make([]float64, lp.m)
	}
	u := lp.u
	for r := range u {
		u[r] = 0
		row := lp.binv[r*lp.m : (r+1)*lp.m]
		for _, j := range lp.cols[q] {
			u[r] += row[j]
		}
		u[r] *= lp.sign[q]
	}
	return u
}

// leaving is Harris's two-pass ratio test: the step is bounded by every
// row it would drive below -harrisTol, and among the rows within that bound
// the largest pivot element leaves, for stability. In Bland mode the exact
// least ratio leaves, ties to the smallest column index.
func (lp *master) leaving(u []float64) int {
	if lp.bland {
		return lp.leavingBland(u)
	}
	bound := math.Inf(1)
	for r, ur := range u {
		if ur > tinyPivot {
			bound = min(bound, (lp.x[r]+harrisTol)/ur)
		}
	}
	p := -1
	for r, ur := range u {
		if ur > tinyPivot && lp.x[r]/ur <= bound && (p < 0 || ur > u[p]) {
			p = r
		}
	}
	return p
}

func (lp *master) leavingBland(u []float64) int {
	p, best := -1, math.Inf(1)
	for r, ur := range u {
		if ur <= tinyPivot {
			continue
		}
		ratio := lp.x[r] / ur
		if p < 0 || ratio < best || ratio == best && lp.basis[r] < lp.basis[p] {
			p, best = r, ratio
		}
	}
	return p
}

// snap rounds weights within rounding noise of zero (or below) to zero,
// so that degenerate rows tie exactly.
func snap(x float64) float64 {
	if x < 1e-9 {
		return 0
	}
	return x
}

// swap updates the basis inverse for column q replacing position p.
func (lp *master) swap(p, q int, u []float64) {
	m := lp.m
	prow := lp.binv[p*m : (p+1)*m]
	inv := 1 / u[p]
	for j := range prow {
		prow[j] *= inv
	}
	for r := range m {
		if r == p || u[r] == 0 {
			continue
		}
		row, f := lp.binv[r*m:(r+1)*m], u[r]
		for j, v := range prow {
			row[j] -= f * v
		}
	}
	lp.inBasis[lp.basis[p]] = false
	lp.basis[p], lp.inBasis[q] = q, true
}

// refactor inverts the basis afresh and recomputes x.
func (lp *master) refactor() error {
	m := lp.m
	a := make([]float64, m*m)
	for r, q := range lp.basis {
		for _, row := range lp.cols[q] {
			a[row*m+r] = lp.sign[q]
		}
	}
	if err := invert(a, lp.binv, m); err != nil {
		return err
	}
	for r := range m { // x = B^-1 rhs
		s := 0.0
		for j, v := range lp.binv[r*m : (r+1)*m] {
			s += v * lp.rhs[j]
		}
		if s < -1e-7 { // rounding has led to an infeasible basis
			lp.reset()
			return nil
		}
		lp.x[r] = snap(s)
	}
	return nil
}

// reset returns to the box basis (the plus-columns, all at weight one),
// which is always feasible.
func (lp *master) reset() {
	basis := make([]int, lp.m)
	for r := range basis {
		basis[r] = r
	}
	lp.setBasis(basis)
	clear(lp.binv)
	for r := range lp.m {
		lp.binv[r*lp.m+r], lp.x[r] = 1, lp.rhs[r]
	}
}

// weights returns the weight of every column in the basic solution of the
// unperturbed problem (every row covered exactly once), rounding noise
// snapped to zero.
func (lp *master) weights() []float64 {
	w := make([]float64, len(lp.cols))
	for r, q := range lp.basis {
		s := 0.0
		for _, v := range lp.binv[r*lp.m : (r+1)*lp.m] {
			s += v
		}
		if s > 1e-6 {
			w[q] = s
		}
	}
	return w
}

// boxBinds reports whether a box column carries weight: the duals are held
// by the box, not by the chains.
func (lp *master) boxBinds() bool {
	w := lp.weights()
	for q := range 2 * lp.m {
		if w[q] > 0 {
			return true
		}
	}
	return false
}

// restart takes basis (a column per row) instead of the box basis, unless
// it is singular.
func (lp *master) restart(basis []int) {
	old := slices.Clone(lp.basis)
	lp.setBasis(basis)
	if lp.refactor() != nil {
		lp.setBasis(old)
		_ = lp.refactor() // the box basis is the identity
	}
}

func (lp *master) setBasis(basis []int) {
	for _, q := range lp.basis {
		lp.inBasis[q] = false
	}
	copy(lp.basis, basis)
	for _, q := range lp.basis {
		lp.inBasis[q] = true
	}
}

// barredWeight reports whether a barred column kept weight.
func (lp *master) barredWeight() bool {
	w := lp.weights()
	for _, q := range lp.barred {
		if w[q] > 1e-9 {
			return true
		}
	}
	return false
}
