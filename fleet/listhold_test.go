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

// abLogEvents logs the events other than the per-minute warnings.
func abLogEvents(t *testing.T, e *env) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.events {
		if ev.Type != fleet.EventProviderUnavailable && ev.Type != fleet.EventNoOffers {
			t.Logf("%s %s %s %s %s %s", ev.Time.Format("15:04:05"), ev.Type, ev.Provider, ev.InstanceID, ev.Message, ev.Err)
		}
	}
}

// After a lost Store, a provider that refuses the account's listing is
// waited for, not skipped (tester AB): a 2-node Hot Aisle VM fleet whose new
// Manager (same Owner, empty Store) gets 401 on the bare-metal listing (no
// bare-metal access on the team; the provider's listing fails whole) buys
// nothing and raises one alert. A first fix skipped a provider whose account
// refused a call: it bought a third VM, the two old ones forgotten and
// billing. The VMs are adopted from the VM listing alone (the listing is
// then made per kind), and the fleet needs nothing.
func TestRefusedListingAfterLostStoreBuysNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		s := spec("train", 2, hotType("vm-mi300x-1"))
		require.NoError(t, e.m.Apply(t.Context(), s))
		stop := e.running()
		time.Sleep(30 * time.Minute)
		stop()
		e.m.Close()
		require.Equal(t, 2, liveOf(e, "hotaisle"), "the first Manager's fleet")

		e.m = e.manager(fleet.NewMemoryStore()) // the Store is lost
		require.NoError(t, e.hot.Inject(sim.Fault{Route: "GET /api/teams/{team}/bare_metal/", Status: 401}))
		require.NoError(t, e.m.Apply(t.Context(), s))
		stop = e.running()
		time.Sleep(8 * time.Hour)
		stop()
		abLogEvents(t, e)
		t.Logf("live Hot Aisle VMs %d, creates %d, CreatesRefused alerts %d, fleet members known %d",
			liveOf(e, "hotaisle"), calls(e.hot.Calls(), hotCreate, 0), e.count(fleet.EventCreatesRefused), len(e.m.Instances("train")))
		assert.Equal(t, 2, liveOf(e, "hotaisle"), "live VMs for a 2-node fleet")
		assert.Equal(t, 2, calls(e.hot.Calls(), hotCreate, 0), "creates: the first Manager's 2 only")
		assert.Len(t, e.m.Instances("train"), 2, "the fleet's VMs adopted while the bare-metal listing is refused")
		assert.Equal(t, 1, e.count(fleet.EventCreatesRefused), "one alert for one refusal that never ended")
	})
}

// After a lost Store, a fleet both clouds could serve waits for the one
// that refuses the account's calls for a while (tester AB): Vultr answers
// 401 "Unauthorized IP address" for 20 minutes (the new host is not on the
// account's API access list yet); the Manager then adopts its two Vultr
// bare-metal servers and buys nothing on Hot Aisle (a first fix bought two
// Hot Aisle machines at the first refusal and kept them: 51.04 USD/h for a
// 35.04 fleet).
func TestRefusedListingAfterLostStoreWaitsForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		s := spec("train", 2, fleet.Requirements{GPUModel: "MI300X", GPUCount: 8})
		require.NoError(t, e.m.Apply(t.Context(), s))
		stop := e.running()
		time.Sleep(90 * time.Minute)
		stop()
		e.m.Close()
		require.Equal(t, 2, liveOf(e, "vultr"), "the first Manager's fleet, on Vultr bare metal")
		require.Zero(t, liveOf(e, "hotaisle"))

		e.m = e.manager(fleet.NewMemoryStore()) // the Store is lost
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: sim.AnyRoute, Status: 401,
			Message: "Unauthorized IP address: 192.0.2.7", Duration: 20 * time.Minute}))
		require.NoError(t, e.m.Apply(t.Context(), s))
		stop = e.running()
		time.Sleep(10 * time.Hour)
		stop()
		abLogEvents(t, e)
		usd := 0.0
		for _, c := range servers(e.hot.Ledger().Charges) {
			t.Logf("Hot Aisle %s %s billed %v: %.2f USD", c.ResourceID, c.Plan, c.Billed, c.USD)
			usd += c.USD
		}
		t.Logf("live: Vultr %d, Hot Aisle %d", liveOf(e, "vultr"), liveOf(e, "hotaisle"))
		assert.Zero(t, calls(e.hot.Calls(), hotCreate, 0)+calls(e.hot.Calls(), "POST /api/teams/{team}/bare_metal/", 0),
			"machines bought on Hot Aisle while the fleet's two ran on Vultr (%.2f USD)", usd)
		assert.Equal(t, 2, liveOf(e, "vultr"), "the fleet's own servers kept")
	})
}
