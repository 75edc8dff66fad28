package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 16 point 5 and scenario S03 across a restart without the Store:
// Hot Aisle fleets (a VM with a 60-minute minimum, bare metal with 8 hours
// prepaid) are deleted; their releases wait for the reservation ends; the
// process dies and restarts with an empty Store and no fleet. The
// restarted Manager cannot know the start times (Hot Aisle gives none), so
// it tries to release at once and is refused by the minimum. A user
// expects each release retried, never forgotten, and done soon after the
// minimum ends: each server billed at most its minimum plus a few minutes.
func TestEmptyStoreRestartWhileReleasesWaitForTheMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("vm", 1, hotType("vm-mi300x-2"))))
		require.NoError(t, e.m.Apply(t.Context(), spec("bm", 1, hotType("bm-mi300x-8"))))
		require.True(t, e.runUntil(time.Hour, func() bool {
			return len(activeOf(e.m.Instances("vm"))) == 1 && len(activeOf(e.m.Instances("bm"))) == 1 &&
				e.m.Instances("vm")[0].Status == fleet.StatusIdle && e.m.Instances("bm")[0].Status == fleet.StatusIdle
		}))
		require.NoError(t, e.m.Delete(t.Context(), "vm"))
		require.NoError(t, e.m.Delete(t.Context(), "bm"))
		e.run(2 * time.Minute)
		require.Equal(t, 2, liveOf(e, "hotaisle"), "both releases wait for their minimum")
		e.m.Close()

		e.m = e.manager(fleet.NewMemoryStore())
		stop := e.running()
		time.Sleep(9 * time.Hour)
		stop()
		assert.Zero(t, liveOf(e, "hotaisle"), "released after the minimum")
		for _, c := range e.hot.Ledger().Charges {
			if c.Kind == "ssh_key" {
				continue
			}
			minimum := map[string]time.Duration{"vm-mi300x-2": time.Hour, "bm-mi300x-8": 8 * time.Hour}[c.Plan]
			t.Logf("%s %s billed %s (from %s to %s)", c.Plan, c.ResourceID, c.Billed, c.From.Format(time.TimeOnly), c.To.Format(time.TimeOnly))
			assert.LessOrEqual(t, c.Billed, minimum+6*time.Minute, "%s billed past its minimum: %s", c.Plan, c.Description)
		}
		t.Logf("delete calls refused: %d", e.count(fleet.EventTerminationRetry))
	})
}
