package fleet_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/costopt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 17, acceptance 4, on seeds the repository's own test does not use
// (7 to 9): "Targets: ≤ 1.03× the optimum on each kind; dstack's rules ≥
// 1.10× gpufleet on each kind; gpufleet's job waits never longer than
// dstack's". Each kind is asserted as the issue states it (per job for the
// waits, with a minute of slack for the loop's steps).
func TestCostTargetsOnOtherSeedsTesterA(t *testing.T) {
	for _, k := range costKinds() {
		t.Run(k.b.Name, func(t *testing.T) {
			var c costTotals
			for seed := uint64(7); seed <= 9; seed++ {
				trace, err := costopt.Generate(costopt.DefaultWorkload(), seed)
				require.NoError(t, err)
				c.add(playCost(t, k, trace, driveOpts{}))
			}
			t.Log(c.row(k.b.Name))
			assert.LessOrEqual(t, ratio(c.fleet, c.opt), 1.03, "gpufleet / optimum")
			assert.GreaterOrEqual(t, ratio(c.dstack, c.fleet), 1.10, "dstack / gpufleet")
			assert.Zero(t, c.longer, "jobs that waited over a minute longer than under dstack's rules (worst %v more)",
				c.worst.Round(time.Second))
		})
	}
}
