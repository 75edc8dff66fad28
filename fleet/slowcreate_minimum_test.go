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
// a minute". Hot Aisle gives no reservation start, and the Manager took
// the moment it planned the create as the start. A create call that takes
// minutes to reach the cloud (slow answer, within CreateTimeout) starts the
// reservation that much later: the idle node (job ended 10 minutes into
// its 30-minute minimum) was released with force that long before its
// minimum's last minute, throwing away paid minutes (a job arriving then
// buys a new minimum). Expected: released in the last minute of the
// minimum (forced there by design, Policy.MinuteReleaseMargin: at most that
// minute unrefunded, nothing billed past the minimum). Tester K's probe,
// with other latencies.
func TestSlowCreateReleasedBeforeTheMinimumEnds(t *testing.T) {
	for _, latency := range []time.Duration{3 * time.Minute, 90 * time.Second, 4*time.Minute + 30*time.Second} {
		t.Run(latency.String(), func(t *testing.T) {
			c, evs := oneJobA{req: hotType("vm-mi300x-1"), pol: fleet.Policy{RebuyHoldOff: true}, idle: time.Minute,
				busyUntil: 10 * time.Minute, horizon: 3 * time.Hour,
				setup: func(_ *sim.Vultr, h *sim.HotAisle) {
					require.NoError(t, h.Inject(sim.Fault{Route: hotCreate, Latency: latency, Times: 1}))
				}}.play(t)
			assert.False(t, c.Live)
			assert.GreaterOrEqual(t, c.To.Sub(c.From), 29*time.Minute, "released %v into its 30-minute minimum (%s)", c.To.Sub(c.From), c.Description)
			assert.Equal(t, 30*time.Minute, c.Billed, c.Description)
			assert.LessOrEqual(t, c.Unrefunded, c.RateUSD/60+1e-9, "more than the last minute thrown away (%s)", c.Description)
			assert.Empty(t, ofType(evs, fleet.EventReleaseForced), "no forced release inside the minimum")
		})
	}
}
