//go:build gpufleet_wip

package costopt

import (
	"testing"
	"time"
)

type lab struct {
	cost int64
	ms   []slot
}

// dominates: a's machines can stand in for b's.
func dominates(a, b lab) bool {
	if a.cost > b.cost {
		return false
	}
	// match each machine of b to a distinct machine of a with end<= and paid>=
	used := make([]bool, len(a.ms))
	var try func(i int, seen []bool) bool
	match := make([]int, len(a.ms))
	for i := range match {
		match[i] = -1
	}
	try = func(i int, seen []bool) bool {
		for j, m := range a.ms {
			if seen[j] || m.end > b.ms[i].end || m.paid < b.ms[i].paid {
				continue
			}
			seen[j] = true
			if match[j] < 0 || try(match[j], seen) {
				match[j] = i
				return true
			}
		}
		return false
	}
	_ = used
	if len(b.ms) > len(a.ms) {
		return false
	}
	for i := range b.ms {
		if !try(i, make([]bool, len(a.ms))) {
			return false
		}
	}
	return true
}

func forward(s *solver) (int64, int) {
	level := []lab{{0, nil}}
	maxStates := 0
	for k, j := range s.jobs {
		var next []lab
		seen := map[string]bool{}
		add := func(c int64, ms []slot) {
			key := s.encode(k+1, ms)
			_ = key
			next = append(next, lab{c, ms})
			_ = seen
		}
		for _, l := range level {
			u, paid := s.fresh(j)
			add(l.cost+u, s.step(l.ms, -1, slot{j.End(), paid}, k))
			for i, m := range l.ms {
				if m.end != idle || i > 0 && l.ms[i-1].end == idle && l.ms[i-1].paid == m.paid {
					continue
				}
				u, paid := s.extend(m.paid, j.End())
				add(l.cost+u, s.step(l.ms, i, slot{j.End(), paid}, k))
			}
		}
		// pareto prune
		var kept []lab
		for i, a := range next {
			dom := false
			for i2, b := range next {
				if i2 == i {
					continue
				}
				if dominates(b, a) && (!dominates(a, b) || i2 < i) {
					dom = true
					break
				}
			}
			if !dom {
				kept = append(kept, a)
			}
		}
		level = kept
		maxStates = max(maxStates, len(level))
	}
	best := level[0].cost
	for _, l := range level {
		best = min(best, l.cost)
	}
	return best, maxStates
}

func TestProtoForward(t *testing.T) {
	for _, n := range []int{10, 15, 20, 25, 30, 40, 50} {
		w := DefaultWorkload()
		w.Jobs = n
		w.Horizon = time.Duration(n) * 12 * time.Hour / 50
		for _, b := range Kinds() {
			for seed := uint64(1); seed <= 2; seed++ {
				tr, _ := Generate(w, seed)
				s := newSolver(tr, b)
				start := time.Now()
				u, st := forward(s)
				ex := int64(-1)
				if n <= 15 {
					ex = newSolver(tr, b).best(0, nil)
				}
				t.Logf("n=%d %s seed %d: units %d (exact %d) max level %d in %v", w.Jobs, b.Name, seed, u, ex, st, time.Since(start))
			}
		}
	}
}
