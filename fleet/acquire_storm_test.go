package fleet_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// 16 concurrent Acquire calls at the very instant an idle node's release
// falls due (Vultr VM: the hour's end less the calm 3-min margin, 57:00;
// Hot Aisle VM, RebuyHoldOff: its minimum's end less 1 min, 29:00; a
// fixed hold's end, RebuySpares 1, RebuyHold 20 min, job to 35:00: 54:50),
// and 100 ms either side. At most one gets the node; one that got it keeps
// it: the node is not deleted under its job (still billing 20 min later,
// no release decided), and nothing else is handed out twice. Holds on
// main; kept as a guard.
func TestAcquireStormAtReleaseInstant(t *testing.T) {
	for _, c := range []struct {
		name   string
		pol    fleet.Policy
		req    fleet.Requirements
		jobEnd time.Duration
		due    time.Duration
	}{
		{"vultr", fleet.Policy{RebuyHoldOff: true}, vultrType(vm), 40 * time.Minute, 57 * time.Minute},
		{"hot", fleet.Policy{RebuyHoldOff: true}, hotType("vm-mi300x-1"), 12 * time.Minute, 29 * time.Minute},
		// a fixed hold's end: job to 35:00, held 20 min, released 10 s before the minute
		{"hot held", fleet.Policy{RebuySpares: 1, RebuyHold: 20 * time.Minute}, hotType("vm-mi300x-1"), 35 * time.Minute, 54*time.Minute + 50*time.Second},
	} {
		for _, skew := range []time.Duration{-100 * time.Millisecond, 0, 100 * time.Millisecond} {
			t.Run(c.name+"/"+skew.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e, x, from, stop := oneNodeAfterJob(t, c.pol, c.req, time.Minute, c.jobEnd, c.jobEnd)
					defer stop()
					// the Manager's own billing start (its create's answer), not the ledger's
					at := x.Created.Add(c.due + skew)
					time.Sleep(time.Until(at))
					var mu sync.Mutex
					var got []fleet.Instance
					var errs []error
					var wg sync.WaitGroup
					for range 16 {
						wg.Go(func() {
							in, err := e.m.Acquire(t.Context(), "a")
							mu.Lock()
							defer mu.Unlock()
							if err == nil {
								got = append(got, in)
							} else {
								errs = append(errs, err)
							}
						})
					}
					wg.Wait()
					for _, err := range errs {
						assert.ErrorIs(t, err, fleet.ErrNoIdle)
					}
					t.Logf("%s at +%v (ledger +%v): %d handed out, %d refused", c.name, c.due+skew, at.Sub(from), len(got), len(errs))
					require.LessOrEqual(t, len(got), 1, "one node handed out %d times", len(got))
					if len(got) == 0 {
						ch := waitChargeEnds(e, x.ID, 3*time.Hour)
						t.Logf("released: billed %v", ch.Billed)
						return
					}
					time.Sleep(time.Until(at.Add(20 * time.Minute)))
					rec := recordOf(e.m, x.ID)
					ch := serverCharge(e, x.ID)
					t.Logf("job on %s: 20 min on, live %v, termination %v, billed %v", x.ID, ch.Live, rec.Termination != nil, ch.Billed)
					assert.True(t, ch.Live, "deleted under its job")
					assert.Nil(t, rec.Termination, "release decided under its job")
					require.NoError(t, e.m.GiveBack(got[0]))
				})
			})
		}
	}
}
