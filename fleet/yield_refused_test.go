package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hold's yield to a fleet refused as sold out picks only nodes an idle
// release can take: not one whose fleet is at its MinNodes, nor one whose
// fleet's IdleTimeout is 0 (Spec.MinNodes, Spec.IdleTimeout: such a node
// is kept, it is no spare held for a next job). Hot Aisle bare metal, a
// pool of 2: fleet "a1" (Nodes 1, MinNodes 1; or IdleTimeout 0) and fleet
// "a2" (Nodes 1) each ran a job to 8:30; both servers idle, held by the
// default hold. At 9:00 fleet "b" applies 1 node and is refused as sold
// out: a2's server yields, b is served within ~30 min.
//
// (tester AY: before the fix, the yield picked a1's server, which nothing
// released, and counted it against b's need, so a2's server did not
// yield either: b waited 7h41m, until a2's hold ended.)
func TestHoldYieldPicksOnlyReleasableNodes(t *testing.T) {
	for _, c := range []struct {
		name     string
		idle     time.Duration
		minNodes int
	}{{"MinNodes1", 5 * time.Minute, 1}, {"IdleTimeout0", 0, 0}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				s := spec("a1", 1, hotType("bm-mi300x-8"))
				s.IdleTimeout, s.MinNodes = c.idle, c.minNodes
				require.NoError(t, e.m.Apply(t.Context(), s))
				require.True(t, e.runUntil(time.Hour, func() bool {
					a := activeOf(e.m.Instances("a1"))
					return len(a) == 1 && a[0].Status == fleet.StatusIdle
				}))
				e.idleFleet("a2", 1, 5*time.Minute, hotType("bm-mi300x-8"))
				stop := e.running()
				defer stop()
				from := jobsUntil(t, e, 8*time.Hour+30*time.Minute, "a1", "a2")
				time.Sleep(time.Until(from.Add(9 * time.Hour)))
				b := spec("b", 1, hotType("bm-mi300x-8"))
				b.IdleTimeout = 5 * time.Minute
				require.NoError(t, e.m.Apply(t.Context(), b))
				asked := time.Now()
				y := acquireWithin(t, e, "b", 20*time.Hour)
				wait := time.Since(asked)
				require.NoError(t, e.m.MarkIdle(y.ID))
				for _, ch := range servers(e.hot.Ledger().Charges) {
					t.Logf("%s billed %v (%s)", ch.ResourceID, ch.Billed, ch.Description)
				}
				for _, ev := range e.eventsOf(fleet.EventReleaseRequested) {
					t.Logf("+%v %s %s: %s", ev.Time.Sub(from).Round(time.Second), ev.Fleet, ev.InstanceID, ev.Message)
				}
				t.Logf("b waited %v", wait)
				assert.LessOrEqual(t, wait, 30*time.Minute, "%s: fleet b waited %v: the yield went to a node no idle release of its fleet takes", c.name, wait)
				assert.Len(t, activeOf(e.m.Instances("a1")), 1, "%s: a1's kept server released", c.name)
			})
		})
	}
}
