package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without an Agent and with OnStoppedRestart, a Hot Aisle bare-metal
// server halted out of band is noticed by its power check and powered on
// again through the fake's power/power_on/ route: no second reservation, no
// release, the same server idle again.
func TestHotAisleHaltedBareMetalIsPoweredOnAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OnStopped: fleet.OnStoppedRestart})
		old := e.haltedHotAisle("bm-mi300x-8")
		e.run(time.Hour)

		log := e.hot.Calls()
		assert.Equal(t, 1, calls(log, "POST /api/teams/{team}/bare_metal/{server}/power/power_on/", 204), "powered on once")
		assert.Equal(t, 1, calls(log, "POST /api/teams/{team}/bare_metal/", 201), "not reserved again")
		assert.Zero(t, calls(log, "DELETE /api/teams/{team}/bare_metal/{server}/", 0), "not released")
		require.Len(t, activeOf(e.m.Instances("f")), 1, "not replaced")
		assert.Equal(t, old, e.only("f").ID)
		assert.Equal(t, fleet.StatusIdle, e.only("f").Status)
		live := e.hot.LiveResources("bare_metal")
		require.Len(t, live, 1)
		assert.Equal(t, "On", live[0].Power, "the fake's own state: powered on")
	})
}
