package costopt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// subsetOptimumA is an independent exact optimum for tiny traces: dynamic
// programming over subsets of jobs. f(S) is the least units serving S; the
// block holding S's lowest job is any subset of S containing it whose jobs,
// in arrival order, each arrive no earlier than the previous one ends (one
// machine, created a boot time before its first job, deleted when its last
// ends). Unlike bruteForce it does not build blocks job by job.
func subsetOptimumA(jobs []Job, b Billing) int64 {
	n := len(jobs)
	full := 1<<n - 1
	cost := make([]int64, full+1) // -1: not one machine
	for s := 1; s <= full; s++ {
		var idx []int
		for i := range n {
			if s&(1<<i) != 0 {
				idx = append(idx, i)
			}
		}
		// idx is in trace order, which is arrival order.
		ok := true
		var last time.Duration
		first := jobs[idx[0]].Arrive
		for k, i := range idx {
			if k > 0 && jobs[i].Arrive < jobs[idx[k-1]].End() {
				ok = false
				break
			}
			last = max(last, jobs[i].End())
		}
		if !ok {
			cost[s] = -1
			continue
		}
		cost[s] = b.Units(last - first + b.BootTime)
	}
	f := make([]int64, full+1)
	for s := 1; s <= full; s++ {
		low := s & -s
		rest := s &^ low
		best := int64(-1)
		for sub := rest; ; sub = (sub - 1) & rest {
			blk := sub | low
			if c := cost[blk]; c >= 0 {
				if v := c + f[s&^blk]; best < 0 || v < best {
					best = v
				}
			}
			if sub == 0 {
				break
			}
		}
		f[s] = best
	}
	return f[full]
}

// tinyTraceA draws n jobs on a 5-minute grid (many ties, many jobs ending
// exactly when another arrives, durations on unit boundaries).
func tinyTraceA(r *rand.Rand, n int, horizon, maxDur time.Duration) Trace {
	grid := 5 * time.Minute
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = Job{Arrive: time.Duration(r.Int64N(int64(horizon/grid))) * grid,
			Duration: time.Duration(1+r.Int64N(int64(maxDur/grid))) * grid}
	}
	slices.SortStableFunc(jobs, func(a, b Job) int { return int((a.Arrive - b.Arrive) / grid) })
	for i := range jobs {
		jobs[i].ID = i
	}
	return Trace{Jobs: jobs}
}

// The optimum against an independent exact optimum on tiny hand-shaped
// traces, for the four kinds and for billings the clouds could also have
// (15-minute units with a 45-minute minimum; hourly with a 3-hour minimum;
// per minute without a minimum; no boot time).
func TestOptimumAgainstSubsetDP(t *testing.T) {
	kinds := append(Kinds(),
		Billing{Name: "quarter hours", Unit: 15 * time.Minute, Minimum: 45 * time.Minute, PricePerHour: 1, BootTime: 7 * time.Minute},
		Billing{Name: "hourly 3h minimum", Unit: time.Hour, Minimum: 3 * time.Hour, PricePerHour: 1, BootTime: 5 * time.Minute},
		Billing{Name: "per minute no minimum", Unit: time.Minute, PricePerHour: 1, BootTime: 0},
		Billing{Name: "hourly no boot", Unit: time.Hour, Minimum: time.Hour, PricePerHour: 1})
	r := rand.New(rand.NewPCG(17, 4))
	for _, b := range kinds {
		for try := range 60 {
			n := 1 + try%12
			tr := tinyTraceA(r, n, []time.Duration{time.Hour, 4 * time.Hour, 12 * time.Hour}[try%3],
				[]time.Duration{20 * time.Minute, time.Hour, 3 * time.Hour}[(try/3)%3])
			require.NoError(t, tr.Validate())
			o, err := Optimum(tr, b)
			require.NoError(t, err)
			want := subsetOptimumA(tr.Jobs, b)
			msg := fmt.Sprintf("%s, try %d, jobs %v", b.Name, try, tr.Jobs)
			require.True(t, o.Proven, msg)
			require.Equal(t, want, o.Units(), msg)
			require.Equal(t, want, bruteForce(tr, b), "the package's own brute force: "+msg)
			require.NoError(t, o.Plan.Check(tr), msg)
			require.LessOrEqual(t, o.LowerBound, o.Bill()+1e-9, msg)
			require.InDelta(t, float64(want)*b.Unit.Hours()*b.PricePerHour, o.LowerBound, 1e-6, msg)
		}
	}
}

// Edge traces: an empty trace costs nothing; a job ending exactly on the
// hour (with the boot) bills that hour only; back-to-back jobs share a
// machine; jobs arriving together need a machine each.
func TestOptimumEdgeTraces(t *testing.T) {
	h, m := time.Hour, time.Minute
	o, err := Optimum(Trace{}, VultrVM())
	require.NoError(t, err)
	require.Zero(t, o.Units())
	require.True(t, o.Proven)
	b := VultrVM()
	b.BootTime = 0
	cases := []struct {
		jobs  []Job
		units int64
	}{
		{[]Job{{0, 0, h}}, 1},
		{[]Job{{0, 0, h + time.Nanosecond}}, 2},
		{[]Job{{0, 0, 30 * m}, {1, 30 * m, 30 * m}}, 1},
		{[]Job{{0, 0, 30 * m}, {1, 0, 30 * m}}, 2},
		{[]Job{{0, 0, 10 * m}, {1, 10 * m, 50 * m}, {2, 60 * m, 60 * m}}, 2},
	}
	for _, c := range cases {
		o, err := Optimum(Trace{Jobs: c.jobs}, b)
		require.NoError(t, err)
		require.Equal(t, c.units, o.Units(), "%v", c.jobs)
		require.Equal(t, c.units, subsetOptimumA(c.jobs, b))
	}
}
