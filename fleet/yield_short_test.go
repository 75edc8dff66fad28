package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fleet refused its stock as sold out needs it for as long as it is
// short, not for a fixed time. Fleet "a" holds its Hot Aisle VM
// (vm-mi300x-1, 30-min minimum, $2.99/h; a fixed hold of one spare for
// 10 h) and runs a job on it. At 40:00 the row is sold out while the
// listing still shows it (SoldOutAfterListing: the last machines went
// between a listing and a create) and fleet "b" is applied with one node
// of it: its create is refused, and b skips the offer for 10 minutes. b's
// tries in those 10 minutes find its one offer skipped, and back off (1 to
// 10 min, jittered). a's job ends after the skip's end, while b's next try
// is still at least 2 minutes away: b is as short as before, and its only
// offer is the one refused, so a's VM yields at once, and the VM it frees
// (put back on sale when it is gone) serves b.
//
// (tester BC: before the fix, b's refusal counted soldOutPenalty, as long
// as the skip, and nothing renewed it while b found its offer skipped: a's
// VM idled, held, from its job's end to b's next try, refused again, and b
// waited that long more; 40 s to 6.5 min per gap on VMs.)
func TestHoldYieldsToAFleetStillShortAfterItsSkip(t *testing.T) {
	for range 3 { // b's backoff is jittered
		t.Run("", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 10 * time.Hour})
				e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
				stop := e.running()
				defer stop()
				x, err := e.m.Acquire(t.Context(), "a")
				require.NoError(t, err)
				from := serverCharge(e, x.ID).From
				time.Sleep(time.Until(from.Add(40 * time.Minute)))
				require.NoError(t, e.hot.SoldOutAfterListing("vm-mi300x-1"))
				s := spec("b", 1, hotType("vm-mi300x-1"))
				s.IdleTimeout = 5 * time.Minute
				require.NoError(t, e.m.Apply(t.Context(), s))
				asked := time.Now()
				next := afterSkipBeforeTry(t, e, "b", 2*time.Minute)
				require.NoError(t, e.m.MarkIdle(x.ID))
				ended := time.Now()
				t.Logf("a's job ended %v after b asked; b's next try was due %v later", ended.Sub(asked).Round(time.Second), next.Sub(ended).Round(time.Second))
				restocked := false
				var served time.Duration
				for {
					if c := serverCharge(e, x.ID); !c.Live && !restocked {
						require.NoError(t, e.hot.SetQuantity("vm-mi300x-1", 1)) // a's VM is back on sale
						restocked = true
					}
					if y, err := e.m.Acquire(t.Context(), "b"); err == nil {
						require.NoError(t, e.m.MarkIdle(y.ID))
						served = time.Since(ended)
						break
					}
					require.True(t, time.Now().Before(ended.Add(2*time.Hour)), "b never served")
					time.Sleep(time.Second)
				}
				c := serverCharge(e, x.ID)
				idle := c.To.Sub(ended)
				t.Logf("b served %v after a's job ended; a's VM billed %v idle after it ($%.3f); yielded: %v",
					served.Round(time.Second), idle.Round(time.Second), idle.Hours()*c.RateUSD, yieldedTo(e, "b", ended))
				assert.Len(t, yieldedTo(e, "b", asked), 1, "b lacks one node")
				assert.LessOrEqual(t, idle, 30*time.Second, "a's VM held %v past its job's end while b, refused its stock, was still short", idle)
			})
		})
	}
}

// afterSkipBeforeTry sleeps until fleet name's last offer refused (its
// last EventOfferSkipped) is more than soldOutPenalty (10 min) old and its
// next try (the At of its last EventNoOffers, said after that refusal) is
// at least gap away, and returns that next try.
func afterSkipBeforeTry(t *testing.T, e *env, name string, gap time.Duration) time.Time {
	t.Helper()
	for limit := time.Now().Add(2 * time.Hour); ; time.Sleep(time.Second) {
		require.True(t, time.Now().Before(limit), "fleet %s: no gap found", name)
		var refused, said, next time.Time
		for _, ev := range e.eventsOf(fleet.EventOfferSkipped) {
			if ev.Fleet == name {
				refused = ev.Time
			}
		}
		for _, ev := range e.eventsOf(fleet.EventNoOffers) {
			if ev.Fleet == name {
				said, next = ev.Time, ev.At
			}
		}
		now := time.Now()
		if !refused.IsZero() && now.After(refused.Add(10*time.Minute)) && !said.Before(refused) && next.Sub(now) >= gap {
			return next
		}
	}
}
