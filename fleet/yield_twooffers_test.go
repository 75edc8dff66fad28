package fleet_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hot Aisle's whole 8x MI300X stock is held idle past its minimum by the
// re-buy hold of three fleets: "a" and "c" each hold one bare-metal server
// (the pool of 2, 8 h minimum, $27.12/h) and "d" the one 8x VM (60 min
// minimum), each after one job that ended at 8:40, past every minimum. At
// 8:50 fleet "b" is applied with ONE node whose requirements (8 MI300X on
// Hot Aisle) both offers match; the catalog lists both sold out. b lacks
// one node: one held node yields, whichever offer it is on (a fleet's
// shortfall is counted once across the offers it was refused, and a yield
// on any of them counts against it); the other holds stay.
//
// (tester AS: two held nodes yielded before, 1 s after b's refusal, for
// b's one missing node, one per sold-out offer b matches: a's bare-metal
// server and d's VM were both released, and once c's server too at 10m1s.
// b took the VM's stock; a's server was released for nobody: a's next job
// inside its 10-h hold buys a new 480-minute minimum, $216.96.)
func TestHoldYieldsOncePerShortNodeNotPerOffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 10 * time.Hour})
		e.idleFleet("a", 1, 5*time.Minute, hotType("bm-mi300x-8"))
		e.idleFleet("c", 1, 5*time.Minute, hotType("bm-mi300x-8"))
		e.idleFleet("d", 1, 5*time.Minute, hotType("vm-mi300x-8"))
		stop := e.running()
		defer stop()
		var jobs []fleet.Instance
		for _, f := range []string{"a", "c", "d"} {
			x, err := e.m.Acquire(t.Context(), f)
			require.NoError(t, err)
			jobs = append(jobs, x)
		}
		from := servers(e.hot.Ledger().Charges)[0].From
		time.Sleep(time.Until(from.Add(8*time.Hour + 40*time.Minute)))
		for _, x := range jobs { // each ran one job, to 8:40, past every minimum
			require.NoError(t, e.m.MarkIdle(x.ID))
		}
		time.Sleep(10 * time.Minute)
		for _, c := range servers(e.hot.Ledger().Charges) {
			t.Logf("before b: %s %s from %v billed %v live %v", c.ResourceID, c.Plan, c.From.Sub(from), c.Billed, c.Live)
		}
		for _, c := range servers(e.hot.Ledger().Charges) {
			require.True(t, c.Live, "%s held past its minimum", c.ResourceID)
		}
		s := spec("b", 1, fleet.Requirements{Providers: []string{"hotaisle"}, GPUModel: "MI300X", GPUCount: 8})
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		asked := time.Now()
		time.Sleep(15 * time.Minute)
		e.mu.Lock()
		var yielded []string
		for _, ev := range e.events {
			if ev.Fleet == "b" || ev.Type == fleet.EventReleaseRequested {
				t.Logf("%v after b: %s %s %s %s %s", ev.Time.Sub(asked), ev.Type, ev.Fleet, ev.InstanceID, ev.Message, ev.Err)
			}
			if ev.Type == fleet.EventReleaseRequested && strings.Contains(ev.Message, "yields to fleet b") {
				yielded = append(yielded, ev.Fleet+" "+ev.InstanceID)
				t.Logf("%v after b: %s %s: %s", ev.Time.Sub(asked), ev.Fleet, ev.InstanceID, ev.Message)
			}
		}
		e.mu.Unlock()
		for _, c := range servers(e.hot.Ledger().Charges) {
			t.Logf("%s %s billed %v live %v", c.ResourceID, c.Plan, c.Billed, c.Live)
		}
		assert.Len(t, yielded, 1, "b lacks one node; held nodes released for it: %v", yielded)
	})
}
