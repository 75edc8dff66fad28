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

// Tester H: the failure scenarios replayed with other inputs than the
// existing tests: bare metal instead of VMs, two fleets at once, faults at
// billing boundaries.

const (
	routeVultrMetalCreate = "POST /v2/bare-metals"
	routeVultrMetalDelete = "DELETE /v2/bare-metals/{id}"
	routeHotMetalReserve  = "POST /api/teams/{team}/bare_metal/"
	routeHotMetalDelete   = "DELETE /api/teams/{team}/bare_metal/{server}/"
	hotMetalUSD           = 27.12 // 2712 cents per hour
)

// S01 on Vultr bare metal: released 5 s after the create, while pending for
// 40 minutes. Expected: terminating through the pending time and the lock,
// then gone, billed one started hour (active at 40 min, lock over at 45).
func TestS01VultrBareMetalReleasedWhilePending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		r := vultrType(mi300x)
		r.Regions = []string{"ord"}
		require.NoError(t, e.m.Apply(t.Context(), spec("h01", 1, r)))
		require.NoError(t, e.m.Reconcile(t.Context()))
		time.Sleep(5 * time.Second)
		e.releaseNow("h01")
		e.run(30 * time.Minute)
		assert.Equal(t, fleet.StatusTerminating, e.only("h01").Status, "refused while pending: still terminating")
		require.True(t, e.runUntil(2*time.Hour, e.terminated("h01")))
		e.assertNothingLeft()
		assert.InDelta(t, 17.52, e.vultr.Ledger().TotalUSD, 0.01, "one started hour, not two")
	})
}

// S06 on Vultr bare metal: the create commits and answers 500. Expected:
// exactly one bare metal (a second one is $17.52 an hour), adopted into the
// fleet; after Delete nothing is left and the bill is one hour.
func TestS06VultrBareMetalCreateCommittedThen500(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: routeVultrMetalCreate, Times: 1, Status: 500, AfterCommit: true}))
		r := vultrType(mi300x)
		r.Regions = []string{"ord"}
		require.NoError(t, e.m.Apply(t.Context(), spec("h06", 1, r)))
		e.run(50 * time.Minute)
		assert.Equal(t, 1, calls(e.vultr.Calls(), routeVultrMetalCreate, 0), "no second create")
		assert.Equal(t, 1, e.liveServers(), "exactly one server")
		assert.Len(t, activeOf(e.m.Instances("h06")), 1)
		require.NoError(t, e.m.Delete(t.Context(), "h06"))
		require.True(t, e.runUntil(time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		e.assertNothingLeft()
		assert.InDelta(t, 17.52, e.vultr.Ledger().TotalUSD, 0.01, "one started hour")
	})
}

// S06/S07 on Hot Aisle bare metal (8 hours charged at once): two fleets
// reserve at the same time and both reserves commit, then answer 502.
// Expected: exactly two bare-metal servers, one per fleet; a third would
// cost 8 x 27.12 USD.
func TestS07HotAisleBareMetalTwoFleetsCommittedThen502(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.hot.Inject(sim.Fault{Route: routeHotMetalReserve, Times: 2, Status: 502, AfterCommit: true}))
		require.NoError(t, e.m.Apply(t.Context(), spec("ha", 1, hotType("bm-mi300x-8"))))
		require.NoError(t, e.m.Apply(t.Context(), spec("hb", 1, hotType("bm-mi300x-8"))))
		e.run(40 * time.Minute)
		t.Logf("reserves %d, live %d", calls(e.hot.Calls(), routeHotMetalReserve, 0), e.liveServers())
		assert.Equal(t, 2, e.liveServers(), "one bare metal per fleet")
		assert.Len(t, activeOf(e.m.Instances("ha")), 1)
		assert.Len(t, activeOf(e.m.Instances("hb")), 1)
		a, b := activeOf(e.m.Instances("ha")), activeOf(e.m.Instances("hb"))
		if len(a) == 1 && len(b) == 1 {
			assert.NotEqual(t, a[0].ID, b[0].ID, "one server in two fleets")
		}
	})
}

// S03 on Hot Aisle bare metal (480-minute minimum, charged at once):
// released at +5 min with the default policy; the release DELETE is
// unavailable (503) from 470 to 500 minutes, across the minimum's end.
// Expected: released once the cloud answers, nothing left, billed the
// minimum plus the alive time past it (not a second reservation).
func TestS03HotAisleBareMetalReleaseAcrossAnOutageAtTheMinimumEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("h03", 1, hotType("bm-mi300x-8"))))
		e.run(5 * time.Minute)
		inst := e.only("h03")
		_, err := e.m.Release(t.Context(), inst.ID)
		require.NoError(t, err)
		require.NoError(t, e.m.Delete(t.Context(), "h03"))
		e.run(465 * time.Minute)
		assert.Equal(t, 1, e.liveServers(), "kept: the minimum is paid anyway")
		require.NoError(t, e.hot.Inject(sim.Fault{Route: routeHotMetalDelete, Status: 503, Duration: 30 * time.Minute}))
		require.True(t, e.runUntil(2*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		e.assertNothingLeft()
		billed := e.hot.Ledger().TotalUSD
		t.Logf("billed %.2f USD", billed)
		assert.GreaterOrEqual(t, billed, 8*hotMetalUSD-0.01)
		assert.LessOrEqual(t, billed, hotMetalUSD*(8+35.0/60), "the minimum and the outage, no more")
	})
}
