package costopt

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchWorkload is n jobs at the default density (50 jobs in 12 hours).
func benchWorkload(n int) Workload {
	w := DefaultWorkload()
	w.Jobs, w.Horizon = n, time.Duration(n)*12*time.Hour/50
	return w
}

// BenchmarkOptimum solves one seeded trace of 50 jobs (12 hours) and one of
// 200 jobs (48 hours) for each machine kind.
func BenchmarkOptimum(b *testing.B) {
	for _, n := range []int{50, 200} {
		tr, err := Generate(benchWorkload(n), 1)
		require.NoError(b, err)
		for _, k := range Kinds() {
			b.Run(fmt.Sprintf("jobs=%d/%s", n, strings.ReplaceAll(k.Name, " ", "_")), func(b *testing.B) {
				for b.Loop() {
					o, err := Optimum(tr, k)
					if err != nil || !o.Proven {
						b.Fatal("not solved", err)
					}
				}
			})
		}
	}
}

func BenchmarkReplayDstack(b *testing.B) {
	tr, err := Generate(benchWorkload(200), 1)
	require.NoError(b, err)
	for b.Loop() {
		if _, err := ReplayDstack(tr, HotAisleVM()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPoliciesVersusOptimum replays dstack's rules and the paid-window rules
// on 20 seeds of the default workload for every kind and compares their
// bills with the optimum (run with -v for the table). dstack's rules waste
// the paid hour on Vultr and the minimum reservation on Hot Aisle, so they
// never come out cheaper than the optimum on these traces.
func TestPoliciesVersusOptimum(t *testing.T) {
	for _, k := range Kinds() {
		var dstack, paid []float64
		for seed := range uint64(20) {
			tr, err := Generate(DefaultWorkload(), seed)
			require.NoError(t, err)
			o := optimum(t, tr, k)
			require.True(t, o.Proven)
			d := replay(t, tr, k, DstackRules())
			p := replay(t, tr, k, PaidWindowRules())
			dstack = append(dstack, d.Bill()/o.Bill())
			paid = append(paid, p.Bill()/o.Bill())
			assert.GreaterOrEqual(t, d.Bill(), o.Bill(), "%s seed %d", k.Name, seed)
		}
		t.Logf("%-21s dstack/optimum %s; paid window/optimum %s", k.Name, summary(dstack), summary(paid))
	}
}

func summary(r []float64) string {
	lo, hi, sum := r[0], r[0], 0.0
	for _, x := range r {
		lo, hi, sum = min(lo, x), max(hi, x), sum+x
	}
	return fmt.Sprintf("mean %.3f (min %.3f, max %.3f)", sum/float64(len(r)), lo, hi)
}
