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

// Releases billed by the minute past the minimum do not queue behind
// Policy.Parallelism (each queued minute is paid). Before the fix (tester
// AL): 200 Hot Aisle VMs (vm-mi300x-1, 2.99 USD/h) past their 30-min
// minimum (every minute billed), the fleet deleted during a Hot Aisle
// outage of 20 min (and, second case, with no outage). The releases are
// not boundary-critical (no billing boundary ahead), so they take
// Policy.Parallelism's 8 slots, each held ~20 s by the VM DELETE that
// blocks while the VM is reset: 24 releases a minute. Measured: the last
// VM billed 8 min past the outage's end (or the Delete), 13 h 21 min in
// all past it (39.9 USD) in both cases. Expected: the 200 DELETEs sent
// within about 20 s (the client's 10 rps limiter; billing ends when the
// DELETE arrives), every VM billed at most a minute past, ~33 min in all
// (1.7 USD). During the outage the calls stay bounded (24,400 an hour,
// Parallelism-bound; 25 goroutines).
func TestHotAisleReleasesPastTheMinimumDoNotQueue(t *testing.T) {
	for _, outage := range []bool{true, false} {
		t.Run(fmt.Sprint("200/outage=", outage), func(t *testing.T) { hotAisleOutagePastMinimum(t, 200, outage) })
	}
}

func hotAisleOutagePastMinimum(t *testing.T, n int, outage bool) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.hot.SetVMLimit(1000)
		require.NoError(t, e.hot.SetQuantity("vm-mi300x-1", 1000))
		stop := runningStormEnv(t, e)
		time.Sleep(40 * time.Minute)
		require.NoError(t, e.m.Apply(t.Context(), spec("h", n, hotType("vm-mi300x-1"))))
		insts := waitStormIdle(t, e, "h", n)
		c0 := insts[0].Created
		for _, i := range insts {
			if i.Created.After(c0) {
				c0 = i.Created
			}
		}
		time.Sleep(time.Until(c0.Add(35 * time.Minute)))
		from := time.Now()
		if outage {
			e.hot.Outage(20 * time.Minute)
			time.Sleep(time.Minute)
			require.NoError(t, e.m.Delete(t.Context(), "h"))
			time.Sleep(19 * time.Minute)
		} else {
			require.NoError(t, e.m.Delete(t.Context(), "h"))
		}
		to := time.Now()
		for deadline := time.Now().Add(3 * time.Hour); len(e.m.Fleets()) > 0; time.Sleep(time.Minute) {
			require.True(t, time.Now().Before(deadline), "not deleted")
		}
		peak := stop()
		nc, r429 := windowCalls(e.hot.Calls(), from, to)
		var late time.Duration
		var lateMax time.Duration
		var usd, rate float64
		for _, c := range servers(e.hot.Ledger().Charges) {
			usd += c.USD
			rate = c.RateUSD
			if d := c.To.Sub(to); d > 0 {
				late += d
				lateMax = max(lateMax, d)
			}
		}
		t.Logf("outage %v: %d calls (%.0f/h), 429s %d, peak goroutines %d; billed past the outage's end: %v in all (%.2f USD), latest %v; total USD %.2f",
			to.Sub(from), nc, float64(nc)/to.Sub(from).Hours(), r429, peak, late.Round(time.Second), late.Hours()*rate, lateMax, usd)
		assert.LessOrEqual(t, lateMax, time.Minute, "a VM billed more than a minute past the outage's end")
	})
}
