package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hot Aisle bare metal is prepaid for 8 hours at the reserve: releasing it
// early refunds nothing (the minimum is charged, forced or not). A server
// whose OS install takes 30 minutes (three times the usual 10) is still
// well inside the window already paid, yet the Manager kills it at the
// default 20-minute provisioning deadline, pays the 8 hours for nothing and
// stalls the fleet: the user gets no machine for 216.96 USD. Scenario S11
// asks for per-kind deadlines so that a slow but healthy server is not
// killed in a window already paid ("a 20-minute deadline would kill a
// healthy server and waste a paid hour"); here it wastes 7h40m already paid.
func TestTesterMPrepaidBareMetalNotKilledInsideItsPaidWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{}, sim.WithHotAisleInstallTime(30*time.Minute))
		require.NoError(t, e.m.Apply(t.Context(), spec("bm", 1, hotType("bm-mi300x-8"))))
		ready := e.runUntil(2*time.Hour, func() bool { return e.count(fleet.EventInstanceReady) > 0 })
		assert.Zero(t, e.count(fleet.EventDeadlineMissed),
			"a prepaid server still installing inside its paid 8 h was given up: %v", e.eventsOf(fleet.EventDeadlineMissed))
		assert.True(t, ready, "the server (installed after 30 min, paid for 8 h) never became ready; events %v", summary(e))
		assert.LessOrEqual(t, e.hot.Ledger().TotalUSD, 8*27.12+0.01, "one 8 h reservation at most")
	})
}
