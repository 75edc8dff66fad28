package sim_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/require"
)

// At the fastest speed CheckSpeed accepts the scaled clock never runs
// backwards (tester Y: at 1e6 it overflowed time.Duration after 2h33m of
// wall time and jumped 292 years into the past): it moves forward for a day
// of wall time, then stops at the end of time.Duration's range.
func TestScaledClockAtMaxSpeedNeverRunsBackwards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		require.NoError(t, sim.CheckSpeed(sim.MaxSpeed))
		require.Error(t, sim.CheckSpeed(sim.MaxSpeed*2))
		c := sim.ScaledClock(sim.MaxSpeed)
		start := c.Now()
		prev := start
		for step := range 48 {
			time.Sleep(time.Hour)
			now := c.Now()
			require.False(t, now.Before(prev), "after %d wall hours: %v back to %v", step+1, prev, now)
			if step < 24 {
				require.True(t, now.After(prev), "still moving after %d wall hours", step+1)
			}
			prev = now
		}
		require.Greater(t, prev.Sub(start), 290*365*24*time.Hour)
	})
}
