package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// An orchestrator that re-asserts its nodes' states every few minutes
// (MarkIdle on a node already idle) must not keep a per-minute node, and
// its bill, running for ever: the idle clock runs from the job's end. A
// Hot Aisle VM (30-minute minimum) whose job ends 40 minutes in, with
// IdleTimeout 5 minutes and MarkIdle repeated every 2 minutes, is gone
// within the hour.
func TestRepeatedMarkIdleDoesNotKeepANode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuyHoldOff: true})
		e.idleFleet("f", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		defer stop()
		in, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		time.Sleep(40 * time.Minute)
		require.NoError(t, e.m.MarkIdle(in.ID))
		idle := 0
		for range 30 {
			time.Sleep(2 * time.Minute)
			if e.m.MarkIdle(in.ID) == nil {
				idle++
			}
		}
		assert.Equal(t, 0, liveOf(e, "hotaisle"), "a node idle since its job ended 60 min ago (idle marks repeated %d times) still billing", idle)
	})
}
