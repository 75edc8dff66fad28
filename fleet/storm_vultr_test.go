package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// While a provider is down one delete probes it; the others wait and are
// put off with it, so the calls do not grow with the nodes. Before the fix
// (tester AL), call storm: 200 Vultr VMs created together, the fleet
// deleted idle (released at the hour's end less the margin), a Vultr
// outage from 48 to 59 min of the hour. Every VM's delete is boundary-
// critical from 50 min (the wide margin), so each is tried every 30 s
// beyond Policy.Parallelism, and each attempt is up to 5 HTTP calls (the
// client's retries). Measured: 14,790 DELETEs in the 11 min (80,700 calls
// per hour, 22 per second, one VM alone: 84), bounded only by the client's
// 30 rps limiter (500 VMs: 90,100 per hour); ~300 goroutines. The bill is
// right (every VM one hour, no 429). Expected: while the provider fails
// for a reason other than the request (an outage), the calls do not grow
// with the nodes: say at most 1,000 in the 11 min (one probe delete per 30
// s with its client retries, plus listings, with room to spare).
func TestVultrOutageMeetsOneProbeNotOneDeletePerNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		e := newEnv(t, fleet.Policy{})
		stop := runningStormEnv(t, e)
		time.Sleep(40 * time.Minute) // past the Manager's first 30 min
		require.NoError(t, e.m.Apply(t.Context(), spec("f", n, vultrVM("ewr"))))
		insts := waitStormIdle(t, e, "f", n)
		last := insts[0].Created
		for _, i := range insts {
			if i.Created.After(last) {
				last = i.Created
			}
		}
		require.NoError(t, e.m.Delete(t.Context(), "f"))
		time.Sleep(time.Until(last.Add(48 * time.Minute)))
		from := time.Now()
		require.NoError(t, e.vultr.Outage(11*time.Minute))
		time.Sleep(11 * time.Minute)
		to := time.Now()
		for deadline := time.Now().Add(3 * time.Hour); len(e.m.Fleets()) > 0; time.Sleep(time.Minute) {
			require.True(t, time.Now().Before(deadline), "not deleted")
		}
		peak := stop()
		nc, r429 := windowCalls(e.vultr.Calls(), from, to)
		billed, usd := ledgerOf(e.vultr.Ledger().Charges)
		over := 0
		for _, b := range billed {
			if b > time.Hour {
				over++
			}
		}
		t.Logf("outage %v: %d calls (%.0f/h), 429s %d, peak goroutines %d, VMs billed >1h: %d of %d, USD %.2f",
			to.Sub(from), nc, float64(nc)/to.Sub(from).Hours(), r429, peak, over, len(billed), usd)
		assert.Zero(t, over, "VMs billed a second hour")
		assert.LessOrEqual(t, nc, 1000, "calls to a provider that is down grow with the nodes")
	})
}
