package fleet_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hotVMList = "GET /api/teams/{team}/virtual_machines/"

// chargeOf is the one charge of cloud's ledger.
func chargeOf(t *testing.T, e *env, cloud string) sim.Charge {
	t.Helper()
	charges := e.hot.Ledger().Charges
	if cloud == "vultr" {
		charges = e.vultr.Ledger().Charges
	}
	require.Len(t, charges, 1, "the slow create made one VM")
	return charges[0]
}

// listingsAt is when calls of route came, as offsets from start within [from, to].
func listingsAt(calls []sim.Call, route string, start time.Time, from, to time.Duration) []time.Duration {
	var out []time.Duration
	for _, c := range calls {
		if d := c.Time.Sub(start); c.Route == route && d >= from && d <= to {
			out = append(out, d.Round(time.Second))
		}
	}
	return out
}

// A create (call at 0:00) times out at 5:10 and is given up at 10:00; its
// fleet is deleted meanwhile. The VM lands within the hour after the
// give-up (lateCreateWindow, to 70:00): at 20 min, or in the window's last
// minutes, when the sweeps of the suspect provider have ended. The deleted
// fleet stays in Fleets() while the VM may still land; the provider is
// listed through the window and at its end, the VM found (unlabelled on
// Hot Aisle, by its label on Vultr) and released, and only then is the
// fleet forgotten (a caller stops the Manager once Fleets() is empty), the
// VM billed its minimum or first hour. Before: the fleet forgotten at 10
// min with a VM landing at 20 still billing (a seeded fault-schedule
// leak); tester AK: landing at 67 min, the fleet forgotten at 70 min and
// the VM still billing 3 h later.
func TestDeletedFleetWaitsForACreateLandingInTheWindowsLastMinutes(t *testing.T) {
	for _, cloud := range []string{"hotaisle", "vultr"} {
		for _, landing := range []time.Duration{20 * time.Minute, 61 * time.Minute, 67 * time.Minute, 69*time.Minute + 30*time.Second} {
			t.Run(fmt.Sprintf("%s/%v", cloud, landing), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newEnv(t, fleet.Policy{})
					e.slowCreates(cloud, landing, 1)
					start := time.Now()
					require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, reqOf(cloud))))
					e.run(time.Minute)
					require.NoError(t, e.m.Delete(t.Context(), "f"))
					require.True(t, e.runUntil(4*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
					forgotten := time.Since(start)
					e.m.Close() // the caller stops once the fleet is gone
					time.Sleep(3 * time.Hour)
					c := chargeOf(t, e, cloud)
					t.Logf("fleet forgotten at +%v; VM billed from +%v: %v, live %v", forgotten.Round(time.Second),
						c.From.Sub(start).Round(time.Second), c.Billed, c.Live)
					assert.False(t, c.Live, "the late VM left billing before the fleet was forgotten")
					assert.Greater(t, forgotten, landing, "the fleet outlived its given-up create's landing")
					assert.Zero(t, liveOf(e, cloud))
					e.assertNothingLeft()
					if cloud == "vultr" {
						assert.Equal(t, time.Hour, c.Billed)
					} else {
						assert.LessOrEqual(t, c.Billed, 32*time.Minute, "about its 30-minute minimum (its start is only bounded)")
					}
				})
			})
		}
	}
}

// The same with the Manager kept running and the fleet scaled to 0 (tester
// AK: the last VM listings at 55 and 65 min, the VM landing at 67 min
// billed 3 h 59 min, $11.91, before): listed at the window's end, the VM is
// released at its minimum. The listings for the given-up create are
// bounded: every DriftCheckInterval in the window and one at its end.
func TestGivenUpHotAisleCreateLandingLateInTheWindowIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.slowCreates("hotaisle", 67*time.Minute, 1)
		start := time.Now()
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, reqOf("hotaisle"))))
		e.run(time.Minute)
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 0, reqOf("hotaisle"))))
		stop := e.running()
		time.Sleep(5 * time.Hour)
		stop()
		c := chargeOf(t, e, "hotaisle")
		inWindow := listingsAt(e.hot.Calls(), hotVMList, start, 11*time.Minute, 71*time.Minute)
		t.Logf("VM billed from +%v: %v, $%.2f, live %v; VM listings from +11m to +71m at %v",
			c.From.Sub(start).Round(time.Second), c.Billed, c.USD, c.Live, inWindow)
		assert.False(t, c.Live, "the late VM still billing under a running Manager")
		assert.LessOrEqual(t, c.Billed, 31*time.Minute)
		assert.LessOrEqual(t, len(inWindow), 8, "every DriftCheckInterval and once at the window's end")
	})
}

// A given-up create whose VM never lands: the deleted fleet is forgotten
// just after the window's end (its listing there), not later, with at
// most a listing every DriftCheckInterval meanwhile; no listing of the
// provider follows once nothing is left to watch.
func TestDeletedFleetOfAGivenUpCreateIsForgottenAtTheWindowsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.slowCreates("hotaisle", 20*time.Hour, 1) // lands long after the window, the Manager stopped
		start := time.Now()
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, reqOf("hotaisle"))))
		e.run(time.Minute)
		require.NoError(t, e.m.Delete(t.Context(), "f"))
		require.True(t, e.runUntil(4*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		forgotten := time.Since(start)
		e.run(time.Hour)
		inWindow := listingsAt(e.hot.Calls(), hotVMList, start, 11*time.Minute, forgotten)
		after := listingsAt(e.hot.Calls(), hotVMList, start, forgotten+time.Second, forgotten+time.Hour)
		t.Logf("fleet forgotten at +%v; VM listings from +11m at %v, after %v", forgotten.Round(time.Second), inWindow, after)
		assert.GreaterOrEqual(t, forgotten, 70*time.Minute, "not before the window's end")
		assert.Less(t, forgotten, 71*time.Minute, "right after its listing at the window's end")
		assert.LessOrEqual(t, len(inWindow), 8)
		assert.Empty(t, after)
		e.m.Close()
		time.Sleep(20 * time.Hour) // the create's call ends
	})
}

// A caller that paces Reconcile by NextPass with an Interval of an hour
// (ExampleManager_NextPass) is woken for the listings of a given-up
// create's window, its end included: the VM landing at 69 min of a deleted
// fleet is found and released before the fleet is forgotten.
func TestNextPassWakesForTheLateCreateWindowsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle()
		require.NoError(t, h.Inject(sim.Fault{Route: hotCreate, Latency: 69 * time.Minute, Times: 1}))
		hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
		m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{hp}, Store: fleet.NewMemoryStore(), Owner: "ak", Interval: time.Hour})
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, m.Apply(t.Context(), spec("f", 1, hotType("vm-mi300x-1"))))
		passes := 0
		pass := func() {
			require.NoError(t, m.Reconcile(t.Context()))
			passes++
			time.Sleep(time.Until(m.NextPass()))
		}
		for time.Since(start) < time.Minute {
			pass()
		}
		require.NoError(t, m.Delete(t.Context(), "f"))
		for len(m.Fleets()) > 0 && time.Since(start) < 4*time.Hour {
			pass()
		}
		forgotten := time.Since(start)
		m.Close()
		time.Sleep(3 * time.Hour)
		charges := h.Ledger().Charges
		require.Len(t, charges, 1)
		c := charges[0]
		t.Logf("%d passes; fleet forgotten at +%v; VM billed from +%v: %v, live %v", passes, forgotten.Round(time.Second),
			c.From.Sub(start).Round(time.Second), c.Billed, c.Live)
		assert.False(t, c.Live)
		assert.LessOrEqual(t, c.Billed, 32*time.Minute)
	})
}
