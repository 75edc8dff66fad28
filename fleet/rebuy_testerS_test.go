package fleet_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
)

func billedTotalS(res driveResult) time.Duration {
	var total time.Duration
	for _, b := range res.Billed {
		total += b
	}
	return total
}

// Acceptance 2: one long job past 1.5 minimums, then a short job minutes
// after it ended. Keeping the node costs the gap; a new minimum costs it all.
func TestTesterSLongFirstJobThenShortGap(t *testing.T) {
	for _, c := range []struct {
		name string
		req  fleet.Requirements
		jobs []workJob
		max  time.Duration
	}{
		{"ha bm 13h job then 20m gap", hotType("bm-mi300x-8"),
			[]workJob{{0, 13 * time.Hour}, {13*time.Hour + 30*time.Minute, time.Hour}}, 15 * time.Hour},
		{"ha vm 50m job then 5m gap", hotType("vm-mi300x-1"),
			[]workJob{{0, 50 * time.Minute}, {55 * time.Minute, 5 * time.Minute}}, 70 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := driveWith(t, c.req, c.jobs, driveOpts{tail: true})
			total := billedTotalS(res)
			assert.LessOrEqual(t, total, c.max, "billed %v per machine %v; machines %v; waits %v", total, res.Billed, res.Machines, res.Waits)
		})
	}
}
