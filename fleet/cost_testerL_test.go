package fleet_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/costopt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One 40-minute job on a Hot Aisle VM, driven through the Manager on the
// sims as the cost benchmark does. No plan serves one job for less than the
// offline optimum ("the least possible bill for the same jobs"), and the job
// did not queue for a busy machine; yet the sims' ledger bills gpufleet less
// than the optimum: costopt.HotAisleVM bills a 90-second boot before the
// job, while the benchmark's nodes are ready (and the job starts) 10 s after
// the create call.
func TestTesterLSingleHotAisleVMJobBeatsTheOptimum(t *testing.T) {
	k := costKinds(t)[2]
	require.Equal(t, "Hot Aisle VM", k.b.Name)
	job := 40 * time.Minute
	res := driveJobs(t, k.req, []workJob{{0, job}}, defaultPolicy())
	opt, err := costopt.Optimum(costopt.Trace{Jobs: []costopt.Job{{ID: 0, Arrive: 0, Duration: job}}}, k.b)
	require.NoError(t, err)
	fleetUnits := billedUnits(res, k.b)
	assert.GreaterOrEqual(t, fleetUnits, opt.Units(),
		"gpufleet billed %d min (job waited %v) below the optimum's %d min (boot assumed %v)",
		fleetUnits, res.Waits, opt.Units(), k.b.BootTime)
}

// The benchmark's claim for Hot Aisle VMs ("within 1.03 of the optimum",
// BENCHMARKS.md; acceptance point 4's target), on the CI's three seeds, with
// the offline optimum computed for the boot the benchmark's nodes actually
// have on the sim (the wait of a job that gets a new node, measured here)
// instead of costopt's 90 s.
func TestTesterLHotAisleVMRatioWithTheSimsBoot(t *testing.T) {
	k := costKinds(t)[2]
	require.Equal(t, "Hot Aisle VM", k.b.Name)
	boot := driveJobs(t, k.req, []workJob{{0, 40 * time.Minute}}, defaultPolicy()).Waits[0]
	b := k.b
	b.BootTime = boot
	var fleetUnits, optUnits, optCostopt int64
	for seed := range uint64(3) {
		trace, err := costopt.Generate(costopt.DefaultWorkload(), seed+1)
		require.NoError(t, err)
		res := driveJobs(t, k.req, workJobs(trace), defaultPolicy())
		o, err := costopt.Optimum(trace, b)
		require.NoError(t, err)
		require.True(t, o.Proven)
		o2, err := costopt.Optimum(trace, k.b)
		require.NoError(t, err)
		fleetUnits, optUnits, optCostopt = fleetUnits+billedUnits(res, k.b), optUnits+o.Units(), optCostopt+o2.Units()
	}
	assert.LessOrEqual(t, ratio(fleetUnits, optUnits), 1.03,
		"gpufleet / optimum with the sim's %v boot: %d / %d = %.3f (with costopt's %v boot: %d, %.3f)",
		boot, fleetUnits, optUnits, ratio(fleetUnits, optUnits), k.b.BootTime, optCostopt, ratio(fleetUnits, optCostopt))
}
