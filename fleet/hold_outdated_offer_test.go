package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acceptance 2 after a spec change: the hold weighs keeping a
// node against "the minimum reservation a replacement would need". After a
// fleet's spec changed from Hot Aisle bare metal (8 h minimum, $27.12/h)
// to vm-mi300x-8 (60 min minimum, $23.92/h), a replacement for its old
// bare-metal node is a VM: a re-buy wastes at most an hour of a VM
// ($23.92): the bare-metal node ($27.12/h) is held at most 53 minutes
// (outdatedHold), not its own offer's 8 h break-even.
//
// Input: fleet "a", one bm-mi300x-8 node; a job from its start to 8h30m;
// at 8h the spec changes to vm-mi300x-8 (Nodes 1, IdleTimeout 5 min); the
// job is given back at 8h30m; no job comes for 10 h.
// Keeping the node longer than a VM's minimum costs more than any re-buy
// could. (tester BG: before the fix, it was kept 8 h idle, $216.96.)
func TestHoldAfterSpecChangeWeighsTheReplacementOffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.idleFleet("a", 1, 5*time.Minute, hotType("bm-mi300x-8"))
		stop := e.running()
		defer stop()
		x, err := e.m.Acquire(t.Context(), "a")
		require.NoError(t, err)
		from := serverCharge(e, x.ID).From
		time.Sleep(time.Until(from.Add(8 * time.Hour)))
		s := spec("a", 1, hotType("vm-mi300x-8"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		time.Sleep(time.Until(from.Add(8*time.Hour + 30*time.Minute)))
		require.NoError(t, e.m.GiveBack(x))
		ended := time.Now()
		c := waitChargeEnds(e, x.ID, 10*time.Hour)
		idle := c.To.Sub(ended).Round(time.Minute)
		t.Logf("bare-metal node kept %v after its job, billed %v ($%.2f) in all", idle, c.Billed, c.USD)
		assert.LessOrEqual(t, idle, time.Hour+5*time.Minute,
			"the old bare-metal node held %v idle ($%.2f) where a re-buy is a VM wasting at most its 60 min minimum ($23.92)",
			idle, idle.Hours()*27.12)
		assert.GreaterOrEqual(t, idle, 45*time.Minute, "held less than a VM re-buy would waste ($23.92 buys 53 min of it)")
	})
}

// The bound holds for a fixed hold too, and for a node dearer per hour than
// the new spec's offer with the same minimum: fleet "a" of one vm-mi300x-8
// ($23.92/h, 60 min minimum), its spec changed to vm-mi300x-2 ($5.98/h,
// 60 min minimum, Nodes 1) while its job runs; RebuySpares 1, RebuyHold
// 1 h. The job ends past the minimum and no job comes: a re-buy of a
// vm-mi300x-2 wastes at most $5.98, which buys 15 minutes of the old node —
// it goes then, not after an hour ($23.92), nor after its IdleTimeout as if
// not held.
func TestFixedHoldOfANodeTheSpecNoLongerMatchesIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: time.Hour})
		e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-8"))
		stop := e.running()
		defer stop()
		a, err := e.m.Acquire(t.Context(), "a")
		require.NoError(t, err)
		from := serverCharge(e, a.ID).From
		s := spec("a", 1, hotType("vm-mi300x-2"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		time.Sleep(time.Until(from.Add(80 * time.Minute)))
		require.NoError(t, e.m.GiveBack(a))
		ended := time.Now()
		c := waitChargeEnds(e, a.ID, 4*time.Hour)
		idle := c.To.Sub(ended).Round(time.Minute)
		t.Logf("vm-mi300x-8 kept %v after its job, billed $%.2f in all", idle, c.USD)
		assert.LessOrEqual(t, idle, 16*time.Minute, "held %v ($%.2f) where a vm-mi300x-2 re-buy wastes at most $5.98", idle, idle.Hours()*23.92)
		assert.GreaterOrEqual(t, idle, 14*time.Minute, "held less than a vm-mi300x-2 re-buy would waste")
	})
}
