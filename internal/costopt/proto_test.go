//go:build gpufleet_wip

package costopt

import (
	"testing"
	"time"
)

func TestProtoStates(t *testing.T) {
	for _, n := range []int{10, 15, 20, 25, 30} {
		w := DefaultWorkload()
		w.Jobs = n
		w.Horizon = time.Duration(n) * 12 * time.Hour / 50
		for _, b := range Kinds() {
			for seed := uint64(1); seed <= 2; seed++ {
				tr, _ := Generate(w, seed)
				s := newSolver(tr, b)
				start := time.Now()
				u := s.best(0, nil)
				t.Logf("n=%d h=%v %s seed %d: units %d usd %.2f states %d in %v", w.Jobs, w.Horizon, b.Name, seed, u, b.usd(u), len(s.memo), time.Since(start))
			}
		}
	}
}
