package fleet_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/costopt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The break-even hold keeps no more idle servers than the fleet's jobs ever
// needed at once (tester AC): on Hot Aisle bare metal three 1-minute jobs 2
// minutes apart, then one at 9 h; three servers were bought while the jobs
// waited for the boot, but the jobs never ran more than one at a time. One
// server is held past its minimum (it takes the 9 h job, then is held one
// hold after it: no job came, the hold's whole cost, at most a minimum); the
// other two go at their minimum's end. The default held max(8, peak) = 8
// spares: all three servers ~8 h past their minimum, 1,376 idle minutes and
// 2,877 billed where the optimum is 552. The bill stays within twice the
// optimum plus one minimum per server.
func TestRebuyHoldKeepsNoMoreSparesThanTheJobsNeeded(t *testing.T) {
	k := costKinds(t)[3]
	require.Equal(t, "Hot Aisle bare metal", k.b.Name)
	trace := costopt.Trace{Jobs: []costopt.Job{
		{ID: 0, Arrive: 0, Duration: time.Minute},
		{ID: 1, Arrive: 2 * time.Minute, Duration: time.Minute},
		{ID: 2, Arrive: 4 * time.Minute, Duration: time.Minute},
		{ID: 3, Arrive: 540 * time.Minute, Duration: time.Minute},
	}}
	res := driveWith(t, k.req, workJobs(trace), driveOpts{tail: true})
	plan := fleetPlan(trace, res, k.b)
	var idlePast time.Duration // idle past each server's minimum or last job, the later
	held := 0
	for _, m := range plan.Machines {
		base := m.Created + k.b.Minimum
		for _, r := range m.Runs {
			base = max(base, r.Start+trace.Jobs[r.Job].Duration)
		}
		idlePast += max(0, m.Deleted-base)
		if m.Deleted-base > 5*time.Minute {
			held++
		}
	}
	opt, err := costopt.Optimum(trace, k.b)
	require.NoError(t, err)
	bound := 2*opt.Units() + int64(len(plan.Machines))*int64(k.b.Minimum/k.b.Unit)
	t.Logf("%d servers, billed %d min (optimum %d), waits %v, idle past minimums %v", len(plan.Machines), plan.Units(), opt.Units(), res.Waits, idlePast)
	assert.Equal(t, 1, held, "servers held past their minimum or last job: as many as jobs ever ran at once")
	assert.LessOrEqual(t, idlePast, k.b.Minimum, "idle past the minimums: one hold, at most a minimum")
	assert.LessOrEqual(t, plan.Units(), bound, "bill at most twice the optimum plus one minimum per server")
}
