package fleet_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/internal/costopt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// costKind is one kind of machine of the cost comparison: its billing
// rules (for the offline optimum and the dstack replay) and the fleet
// requirements that rent it on the sims.
type costKind struct {
	b   costopt.Billing
	req fleet.Requirements
}

func costKinds() []costKind {
	return []costKind{
		{costopt.VultrVM(), vultrType("vcg-a100-12c-120g-80vram")},
		{costopt.VultrBareMetal(), vultrType(mi300x)},
		{costopt.HotAisleVM(), hotType("vm-mi300x-1")},
		{costopt.HotAisleBareMetal(), hotType("bm-mi300x-8")},
	}
}

// costRatios plays one seeded workload on one kind: gpufleet's billed
// units (from the sims' ledgers) over the offline optimum's, dstack's rules
// replayed over gpufleet's, and the longest job wait by which gpufleet
// exceeds dstack's replay.
func costRatios(t *testing.T, k costKind, seed uint64, w costopt.Workload) (vsOptimum, dstackVs float64, worseWait time.Duration) {
	t.Helper()
	trace, err := costopt.Generate(w, seed)
	require.NoError(t, err)
	jobs := make([]workJob, len(trace.Jobs))
	for i, j := range trace.Jobs {
		jobs[i] = workJob{Arrive: j.Arrive, Duration: j.Duration}
	}
	res := driveJobs(t, k.req, jobs, fleet.Policy{})
	var units int64
	for _, d := range res.Billed {
		units += int64((d + k.b.Unit - 1) / k.b.Unit)
	}
	opt, err := costopt.Optimum(trace, k.b)
	require.NoError(t, err)
	ds, err := costopt.ReplayDstack(trace, k.b)
	require.NoError(t, err)
	for i, wait := range res.Waits {
		worseWait = max(worseWait, wait-ds.Waits[i])
	}
	return float64(units) / float64(opt.Units()), float64(ds.Units()) / float64(units), worseWait
}

// The cost of gpufleet's release rules on seeded workloads of the four
// kinds, beside the offline optimum (which knows the future) and dstack's
// rules replayed on the same trace. Figures in BENCHMARKS.md; a short
// workload here, the full one in BenchmarkReleaseCost.
func TestReleaseCostAgainstTheOptimum(t *testing.T) {
	w := costopt.DefaultWorkload()
	w.Jobs, w.Horizon = 12, 4*time.Hour
	for _, k := range costKinds() {
		t.Run(k.b.Name, func(t *testing.T) {
			vsOpt, dsVs, wait := costRatios(t, k, 1, w)
			t.Logf("%s: gpufleet %.3fx the optimum; dstack's rules %.3fx gpufleet; worst extra wait %s", k.b.Name, vsOpt, dsVs, wait)
			assert.GreaterOrEqual(t, vsOpt, 1.0, "no plan beats the optimum")
		})
	}
}

// TestReleaseCostFull is the full comparison: the default workload (50 jobs
// over 12 hours) on GPUFLEET_COST_SEEDS seeds per kind (not run when the
// variable is unset: it takes minutes). It prints the mean ratios.
func TestReleaseCostFull(t *testing.T) {
	seeds, _ := strconv.Atoi(os.Getenv("GPUFLEET_COST_SEEDS"))
	if seeds <= 0 {
		t.Skip("set GPUFLEET_COST_SEEDS to run the full cost comparison")
	}
	for _, k := range costKinds() {
		var sumOpt, sumDs float64
		var worst time.Duration
		for seed := range seeds {
			vsOpt, dsVs, wait := costRatios(t, k, uint64(seed+1), costopt.DefaultWorkload())
			sumOpt, sumDs, worst = sumOpt+vsOpt, sumDs+dsVs, max(worst, wait)
		}
		t.Logf("%-22s gpufleet %.3fx the optimum; dstack's rules %.3fx gpufleet; worst extra wait %s (%d seeds)",
			k.b.Name, sumOpt/float64(seeds), sumDs/float64(seeds), worst.Round(time.Second), seeds)
	}
}
