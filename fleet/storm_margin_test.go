package fleet_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The margin-window listings stay bounded whatever the node count (none
// for nodes no idle release can take). Before the fix (tester AL), margin-
// check listings: n idle Vultr VMs kept (IdleTimeout 0) whose billed hours
// end at different times (one created every 3600/n s). marginCheck lists
// the provider at every idle node's hour end less HourlyReleaseMargin,
// unless a listing came after that moment: one listing per idle node per
// hour. Measured in the steady state: 20 VMs 20 GET /v2/instances per
// hour, 200 VMs 200 per hour (410 with the bare-metal listing refused,
// plus 6 refused bare-metal and 6 VPC listings), against 6 drift listings
// an hour without the check. Expected: bounded whatever n, e.g. a listing
// up to 2 min before a node's margin start counting for it (health judged
// 12 min before the hour's end instead of 10): at most 30 margin listings
// + 6 drift listings an hour (one page of 500 each), 72 calls in the 2 h
// measured.
func TestMarginListingsStayBoundedWithSpreadHours(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprint("200/metal-refused=", refuse), func(t *testing.T) { marginCheckSpread(t, 200, refuse) })
	}
}

func marginCheckSpread(t *testing.T, n int, refuseMetal bool) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		if refuseMetal {
			refuseVultrMetal(e, 10*time.Hour)
		}
		stop := runningStormEnv(t, e)
		time.Sleep(40 * time.Minute)
		step := time.Hour / time.Duration(n)
		for i := 1; i <= n; i++ {
			s := spec("g", i, vultrVM("ewr"))
			require.NoError(t, e.m.Apply(t.Context(), s))
			time.Sleep(step)
		}
		waitStormIdle(t, e, "g", n)
		time.Sleep(30 * time.Minute)
		e.vultr.ResetCalls()
		time.Sleep(2 * time.Hour)
		log := e.vultr.Calls()
		peak := stop()
		by := map[string]int{}
		for _, c := range log {
			by[c.Route]++
		}
		t.Logf("%d idle VMs, hours ending spread: %d calls in 2 h (%.0f/h), peak goroutines %d, by route %v",
			n, len(log), float64(len(log))/2, peak, by)
		assert.LessOrEqual(t, by["GET /v2/instances"], 72, "VM listings in 2 h grow with the idle nodes")
	})
}
