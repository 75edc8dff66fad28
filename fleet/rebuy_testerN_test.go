package fleet_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
)

// Tester N: a sparse periodic workload on Hot Aisle: one short job every
// few hours, each node long gone when the next job comes. Policy.RebuyHoldOff's
// doc: the break-even hold is the default only "while the fleet's jobs span
// less than one and a half minimums (from its first job)"; after that the
// replay decides, and a hold is chosen only when it would have saved a
// minimum. No hold saves anything here, so every job after the fleet's
// first should cost one minimum (plus boot), as in the optimum. The code
// measures the span from the first job still inside the replay window
// (jobs[0] in bestRebuy), so every job after a quiet gap longer than the
// window is treated as a fleet's first job and held.
func TestTesterNSparseJobsNotHeldPastTheirMinimum(t *testing.T) {
	for _, c := range []struct {
		name  string
		req   fleet.Requirements
		every time.Duration
		job   time.Duration
		max   time.Duration // per machine after the first
	}{
		{"ha vm, 10 min every 4 h", hotType("vm-mi300x-1"), 4 * time.Hour, 10 * time.Minute, 35 * time.Minute},
		{"ha bm, 1 h every 24 h", hotType("bm-mi300x-8"), 24 * time.Hour, time.Hour, 8*time.Hour + 15*time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			var jobs []workJob
			for i := range 4 {
				jobs = append(jobs, workJob{time.Duration(i) * c.every, c.job})
			}
			res := driveWith(t, c.req, jobs, driveOpts{pol: fleet.Policy{}, tail: true})
			t.Logf("bill $%.2f; billed per machine %v; machines %v", res.BillUSD, res.Billed, res.Machines)
			assert.Len(t, res.Billed, len(jobs))
			for i, b := range res.Billed {
				if i == 0 {
					continue // the fleet's first job: the break-even hold applies
				}
				assert.LessOrEqual(t, b, c.max, "machine %d (a fleet whose first job was %v earlier) billed %v", i, time.Duration(i)*c.every, b)
			}
		})
	}
}
