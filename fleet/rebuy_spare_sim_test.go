package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tester E probe (money, Hot Aisle bare metal on the sim). Two idle
// bare-metal nodes (8 hours prepaid each at creation) that the re-buy hold
// keeps as spares for an hour past their minimum must live at least until
// their minimum ends: releasing earlier refunds nothing (the release is
// forced, the 8 hours charged whole) and the next job buys a new 8-hour
// minimum. A spare is released IdleTimeout or its hold after it went idle,
// whichever is longer, with no floor at its minimum's end: here both go
// about 1 h 15 min into their 8 hours. Without the hold (RebuyHoldOff) the
// same nodes live until the minimum ends. Issue 17, acceptance 1 and 2.
func TestHeldBareMetalSparesLiveUntilTheirMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		s := spec("f", 2, hotType("bm-mi300x-8"))
		s.IdleTimeout = 10 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		fleet.FixRebuyHold(e.m, "f", 2, time.Hour) // a hold the replay may choose: two spares, an eighth of the minimum
		require.True(t, e.runUntil(time.Hour, func() bool {
			a := activeOf(e.m.Instances("f"))
			return len(a) == 2 && a[0].Status == fleet.StatusIdle && a[1].Status == fleet.StatusIdle
		}))
		e.run(3 * time.Hour)
		assert.Zero(t, calls(e.hot.Calls(), hotBMRelease, 0), "released inside the prepaid 8 hours")
		assert.Equal(t, 2, live(e.hot.Resources(), "bare_metal"))
		assert.Empty(t, e.eventsOf(fleet.EventReleaseForced))
	})
}
