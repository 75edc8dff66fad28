package fleet_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acceptance 1 on Hot Aisle: an idle node is released at "minimum end minus
// a minute". Hot Aisle gives no reservation start, and the Manager takes the
// moment it planned the create as the start. A create call that takes 3
// minutes to reach the cloud (slow answer, within CreateTimeout) starts the
// reservation 3 minutes later than that: the idle node (job ended 10
// minutes into its 30-minute minimum) is released with force about 4
// minutes before its minimum ends, throwing away paid minutes (a job
// arriving then buys a new minimum). Expected: released in the last minute
// of the minimum, without force.
func TestTesterKSlowCreateReleasedBeforeTheMinimumEnds(t *testing.T) {
	c, evs := oneJobA{req: hotType("vm-mi300x-1"), pol: fleet.Policy{RebuyHoldOff: true}, idle: time.Minute,
		busyUntil: 10 * time.Minute, horizon: 3 * time.Hour,
		setup: func(_ *sim.Vultr, h *sim.HotAisle) {
			require.NoError(t, h.Inject(sim.Fault{Route: hotCreate, Latency: 3 * time.Minute, Times: 1}))
		}}.play(t)
	assert.False(t, c.Live)
	assert.GreaterOrEqual(t, c.To.Sub(c.From), 29*time.Minute, "released %v into its 30-minute minimum (%s)", c.To.Sub(c.From), c.Description)
	assert.Zero(t, c.Unrefunded, "forced: %v", ofType(evs, fleet.EventReleaseForced))
}
