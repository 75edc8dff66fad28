package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
)

// Tester K: re-buy awareness on the sims (acceptance 2), with the
// cost benchmark's orchestrator (Acquire, grow with Apply, MarkIdle).
func TestTesterKRebuy(t *testing.T) {
	for _, c := range []struct {
		name string
		req  fleet.Requirements
		jobs []workJob
		max  time.Duration // the most the bill may be
	}{
		{"ha bm second job 20m after the minimum", hotType("bm-mi300x-8"),
			[]workJob{{0, 7 * time.Hour}, {8*time.Hour + 20*time.Minute, time.Hour}}, 10 * time.Hour},
		{"ha vm second job 5m after the minimum", hotType("vm-mi300x-1"),
			[]workJob{{0, 20 * time.Minute}, {35 * time.Minute, 10 * time.Minute}}, 50 * time.Minute},
		{"ha vm third job after the minimum, demand returned", hotType("vm-mi300x-1"),
			[]workJob{{0, 5 * time.Minute}, {10 * time.Minute, 5 * time.Minute}, {40 * time.Minute, 5 * time.Minute}}, 50 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := driveJobs(t, c.req, c.jobs, fleet.Policy{})
			var total time.Duration
			for _, b := range res.Billed {
				total += b
			}
			fmt.Printf("%s: billed %v %v machines %v runs %v waits %v\n", c.name, total, res.Billed, res.Machines, res.Runs, res.Waits)
			assert.LessOrEqual(t, total, c.max, "billed %v per machine %v", total, res.Billed)
		})
	}
}
