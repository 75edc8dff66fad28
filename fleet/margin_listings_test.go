package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The listing inside the margin window (marginCheck) is made only for
// nodes an idle release can take: a fleet of 30 Vultr VMs grown 2 minutes
// apart and kept idle with IdleTimeout 0 (never released for idleness)
// makes no more VM listings than the routine ones (Policy.
// DriftCheckInterval, one listing serving every node): at most 7 an hour
// (tester AK: 30 an hour, one per node).
func TestMarginListingsOnlyForNodesAnIdleReleaseCanTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		stop := e.running()
		const nodes = 30
		for n := 1; n <= nodes; n++ {
			require.NoError(t, e.m.Apply(t.Context(), spec("web", n, vultrVM("ewr")))) // IdleTimeout 0
			time.Sleep(2 * time.Minute)
		}
		time.Sleep(2 * time.Hour)
		start := time.Now()
		time.Sleep(2 * time.Hour)
		stop()
		n := 0
		for _, c := range e.vultr.Calls() {
			if c.Route == vultrVMList && !c.Time.Before(start) {
				n++
			}
		}
		assert.Equal(t, nodes, len(ready(e.m.Instances("web"))), "the fleet's nodes, idle and kept")
		assert.LessOrEqual(t, n, 2*7, "VM listings in 2 h with %d idle nodes that no idle release can touch", nodes)
	})
}
