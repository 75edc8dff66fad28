package fleet_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A provider's kinds are down apart: Hot Aisle bare-metal deletes hang
// (each DELETE 10 min, past CallTimeout, then 500) while a bare metal past
// its 8-h minimum is released (retried every 30 s); a VM past its minimum
// (every minute billed) deleted at 9:32:10 is billed to then (42 min,
// $2.09), not held back by the bare metal's probe deletes (tester AM:
// billed to 9:37–9:40, 48–51 min, the VM's delete skipped while the
// bare-metal probe was in flight and put off 30 s with it).
func TestHotAisleVMReleaseIsNotHeldByABareMetalProbe(t *testing.T) {
	for _, list := range []bool{false, true} {
		t.Run(fmt.Sprint("metal-list-fails=", list), func(t *testing.T) { hotVMBehindMetalProbe(t, 10*time.Minute, list) })
	}
}

func hotVMBehindMetalProbe(t *testing.T, lat time.Duration, list bool) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		stop := runningStormEnv(t, e)
		defer stop()
		time.Sleep(40 * time.Minute)
		require.NoError(t, e.m.Apply(t.Context(), spec("bm", 1, hotType("bm-mi300x-8"))))
		waitStormIdle(t, e, "bm", 1)
		time.Sleep(8 * time.Hour)
		require.NoError(t, e.m.Apply(t.Context(), spec("vm", 1, hotType("vm-mi300x-1"))))
		v := waitStormIdle(t, e, "vm", 1)[0]
		time.Sleep(time.Until(v.Created.Add(40 * time.Minute)))
		if lat >= 0 { // -1: no fault (control)
			require.NoError(t, e.hot.Inject(sim.Fault{Route: routeHotMetalDelete, Status: 500, Latency: lat, Duration: 2 * time.Hour}))
			if list {
				require.NoError(t, e.hot.Inject(sim.Fault{Route: "GET /api/teams/{team}/bare_metal/", Status: 500, Duration: 2 * time.Hour}))
			}
		}
		require.NoError(t, e.m.Delete(t.Context(), "bm"))
		time.Sleep(2 * time.Minute)
		del := time.Now()
		require.NoError(t, e.m.Delete(t.Context(), "vm"))
		time.Sleep(2*time.Hour + 15*time.Minute)
		for _, c := range servers(e.hot.Ledger().Charges) {
			t.Logf("%s %s billed %v usd %.3f from %v to %v (vm deleted %v)", c.ResourceID, c.Plan, c.Billed, c.USD, c.From, c.To, del)
			if c.Plan == "vm-mi300x-1" {
				assert.LessOrEqual(t, c.To.Sub(del), time.Minute, "VM billed past its Delete while a bare-metal probe hangs")
			}
		}
	})
}
