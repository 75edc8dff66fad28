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

const (
	vultrMetalList   = "GET /v2/bare-metals"
	vultrMetalCreate = "POST /v2/bare-metals"
	vultrVMList      = "GET /v2/instances"
)

// refuseVultrMetal makes Vultr answer 403 to every bare-metal listing for d
// (0: for good), as for an API key without bare-metal access, while its
// VM listing works.
func refuseVultrMetal(e *env, d time.Duration) {
	e.t.Helper()
	require.NoError(e.t, e.vultr.Inject(sim.Fault{Route: vultrMetalList, Status: 403,
		Message: "You do not have permission to access bare metal.", Duration: d}))
}

// adoptedAt is when the Manager adopted the server id (zero: not adopted).
func adoptedAt(e *env, id string) time.Time {
	for _, ev := range e.eventsOf(fleet.EventInstanceAdopted) {
		if ev.InstanceID == id {
			return ev.Time
		}
	}
	return time.Time{}
}

// liveIDs lists the fleet's members the Manager knows and has not closed.
func liveIDs(e *env, fleetName string) []string {
	var out []string
	for _, i := range e.m.Instances(fleetName) {
		if i.Status != fleet.StatusTerminated && i.ID != "" {
			out = append(out, i.ID)
		}
	}
	return out
}

// A Manager restarted without its Store, whose Vultr key may not list bare
// metal (403 on /v2/bare-metals, /v2/instances fine), adopts its two VMs
// from the VM listing at once and buys nothing; one alert says the
// bare-metal listing is refused. Before, the provider's listing failed
// whole: the VMs stayed unknown, and the fleet waited for as long as the
// refusal lasted.
func TestVMAdoptedWhileBareMetalListingRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		s := spec("web", 2, vultrVM("ewr"))
		require.NoError(t, e.m.Apply(t.Context(), s))
		stop := e.running()
		time.Sleep(20 * time.Minute)
		stop()
		e.m.Close()
		require.Equal(t, 2, liveOf(e, "vultr"), "the first Manager's fleet")
		before := liveIDs(e, "web")

		e.m = e.manager(fleet.NewMemoryStore()) // the Store is lost
		refuseVultrMetal(e, 0)
		start := time.Now()
		require.NoError(t, e.m.Apply(t.Context(), s))
		stop = e.running()
		time.Sleep(time.Hour)
		stop()
		abLogEvents(t, e)
		ids := liveIDs(e, "web")
		for _, id := range before {
			if at := adoptedAt(e, id); at.IsZero() {
				t.Logf("VM %s not adopted", id)
			} else {
				t.Logf("VM %s adopted %v after the restart", id, at.Sub(start))
			}
		}
		t.Logf("members known %d, Vultr VM creates %d, bare-metal listings refused %d, VM listings %d, CreatesRefused alerts %d",
			len(ids), calls(e.vultr.Calls(), vultrCreate, 0), calls(e.vultr.Calls(), vultrMetalList, 403),
			calls(e.vultr.Calls(), vultrVMList, 200), e.count(fleet.EventCreatesRefused))
		assert.ElementsMatch(t, before, ids, "the fleet's VMs adopted while the bare-metal listing is refused")
		for _, id := range before {
			at := adoptedAt(e, id)
			assert.False(t, at.IsZero() || at.Sub(start) > 2*time.Minute, "VM %s adopted within 2 min (at %v)", id, at.Sub(start))
		}
		assert.Equal(t, 2, calls(e.vultr.Calls(), vultrCreate, 0), "creates: the first Manager's 2 only")
		assert.Equal(t, 1, e.count(fleet.EventCreatesRefused), "one alert for one refusal")
	})
}

// A Vultr key without bare-metal access (403 on /v2/bare-metals for the
// whole run) costs one alert and a bare-metal listing per backoff step
// (Config.Interval doubled up to failWaitMaxRefused, 10 min), not one per
// pass; the VM fleet is created and its VM watched meanwhile (creates of
// the kind that lists go on; the refused kind's only).
func TestBareMetalListingRefusalAlertsOnceAndBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		refuseVultrMetal(e, 0)
		require.NoError(t, e.m.Apply(t.Context(), spec("web", 1, vultrVM("ewr"))))
		stop := e.running()
		time.Sleep(time.Hour)
		firstHour := calls(e.vultr.Calls(), vultrMetalList, 403)
		time.Sleep(time.Hour)
		stop()
		refused := calls(e.vultr.Calls(), vultrMetalList, 403)
		t.Logf("bare-metal listings refused: %d in 2 h (%d in the second hour); VM listings %d; VM creates %d; members ready %d; CreatesRefused alerts %d",
			refused, refused-firstHour, calls(e.vultr.Calls(), vultrVMList, 200), calls(e.vultr.Calls(), vultrCreate, 0),
			len(ready(e.m.Instances("web"))), e.count(fleet.EventCreatesRefused))
		// The backoff: 10 s, 20 s, … 320 s (6 tries in the first 630 s), then
		// one try per 10 min: at most 6 + 12 in 2 h, plus the first pass's
		// two (the whole listing, then the bare-metal listing alone).
		assert.LessOrEqual(t, refused, 20, "bare-metal listings refused in 2 h")
		assert.LessOrEqual(t, refused-firstHour, 7, "bare-metal listings refused in the second hour (one per 10 min)")
		assert.Equal(t, 1, e.count(fleet.EventCreatesRefused), "one alert for one refusal spell")
		assert.Equal(t, 1, calls(e.vultr.Calls(), vultrCreate, 0), "the VM fleet's one create")
		assert.Equal(t, 1, len(ready(e.m.Instances("web"))), "the VM fleet's member ready")
		assert.Zero(t, calls(e.vultr.Calls(), vultrMetalCreate, 0))
	})
}

// A Manager restarted without its Store while Vultr refuses its bare-metal
// listing for 30 min adopts the VM fleet at once and grows it (the VM kind
// lists: its creates go on), waits for the bare-metal fleet (its server
// may exist: only the bare-metal listing can tell), and adopts the
// bare-metal server when its listing recovers, buying no second one; the
// spell ends there (one alert in all), and the bare-metal fleet grows.
func TestBareMetalAdoptedWhenItsListingRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		vms, metal := spec("web", 1, vultrVM("ewr")), spec("db", 1, vultrType("vbm-4c-32gb"))
		require.NoError(t, e.m.Apply(t.Context(), vms))
		require.NoError(t, e.m.Apply(t.Context(), metal))
		stop := e.running()
		time.Sleep(50 * time.Minute) // the bare-metal server is active after 40 min
		stop()
		e.m.Close()
		require.Equal(t, 2, liveOf(e, "vultr"), "the first Manager's VM and bare-metal server")
		vmID, metalID := liveIDs(e, "web"), liveIDs(e, "db")
		require.Len(t, vmID, 1)
		require.Len(t, metalID, 1)

		e.m = e.manager(fleet.NewMemoryStore()) // the Store is lost
		const refusal = 30 * time.Minute
		refuseVultrMetal(e, refusal)
		start := time.Now()
		require.NoError(t, e.m.Apply(t.Context(), vms))
		require.NoError(t, e.m.Apply(t.Context(), metal))
		stop = e.running()
		time.Sleep(10 * time.Minute)
		vms.Nodes = 2
		require.NoError(t, e.m.Apply(t.Context(), vms)) // grown while bare metal is refused
		time.Sleep(10 * time.Minute)
		grownDuring := len(liveIDs(e, "web"))
		time.Sleep(70 * time.Minute)
		metal.Nodes = 2
		require.NoError(t, e.m.Apply(t.Context(), metal)) // the spell is over: bare-metal creates go on
		time.Sleep(5 * time.Minute)
		stop()
		abLogEvents(t, e)
		vmAt, metalAt := adoptedAt(e, vmID[0]).Sub(start), adoptedAt(e, metalID[0]).Sub(start)
		t.Logf("VM adopted after %v; bare metal adopted after %v (listing refused for %v); VM members at +20 min %d; creates in all: VM %d, bare metal %d; alerts %d",
			vmAt, metalAt, refusal, grownDuring, calls(e.vultr.Calls(), vultrCreate, 0), calls(e.vultr.Calls(), vultrMetalCreate, 0),
			e.count(fleet.EventCreatesRefused))
		assert.Less(t, vmAt, 2*time.Minute, "the VM adopted at once")
		assert.Equal(t, 2, grownDuring, "the VM fleet grown while bare metal was refused")
		assert.GreaterOrEqual(t, metalAt, refusal, "bare metal adopted only from its own listing")
		assert.Less(t, metalAt, refusal+11*time.Minute, "bare metal adopted within one backoff step of the recovery")
		assert.Contains(t, liveIDs(e, "db"), metalID[0], "the bare-metal server adopted")
		assert.Equal(t, 2, calls(e.vultr.Calls(), vultrMetalCreate, 0), "bare-metal creates: the first Manager's, and the growth's after the spell")
		assert.Equal(t, 2, calls(e.vultr.Calls(), vultrCreate, 0), "VM creates: the first Manager's and the growth's")
		assert.Equal(t, 1, e.count(fleet.EventCreatesRefused), "one alert for one spell")
	})
}

// A bare-metal listing refused in the sweeps of the first hour (from +10
// min to +70 min), when no bare-metal server is tracked, is retried (with
// backoff) past that hour although nothing of bare metal is due: only its
// listing ends the spell that holds bare-metal creates. A bare-metal fleet
// applied at +100 min, after the refusal ended, gets its server.
func TestBareMetalRefusalEndsWithNothingOfItDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("web", 1, vultrVM("ewr"))))
		stop := e.running()
		time.Sleep(10 * time.Minute)
		refuseVultrMetal(e, time.Hour) // past the sweeps of the first hour
		time.Sleep(90 * time.Minute)
		refusedInSweeps := calls(e.vultr.Calls(), vultrMetalList, 403)
		require.NoError(t, e.m.Apply(t.Context(), spec("db", 1, vultrType("vbm-4c-32gb"))))
		time.Sleep(10 * time.Minute)
		stop()
		abLogEvents(t, e)
		t.Logf("bare-metal listings refused %d; bare-metal creates %d; alerts %d",
			refusedInSweeps, calls(e.vultr.Calls(), vultrMetalCreate, 0), e.count(fleet.EventCreatesRefused))
		require.Positive(t, refusedInSweeps, "the sweeps after start met the refusal")
		assert.Equal(t, 1, e.count(fleet.EventCreatesRefused))
		assert.Equal(t, 1, calls(e.vultr.Calls(), vultrMetalCreate, 0), "the bare-metal fleet's create, after the refusal ended")
	})
}
