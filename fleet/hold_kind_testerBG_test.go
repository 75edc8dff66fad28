package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acceptance 2 after a spec change (tester BG): the hold weighs keeping a
// node against "the minimum reservation a replacement would need". After a
// fleet's spec changed from Hot Aisle bare metal (8 h minimum, $27.12/h)
// to vm-mi300x-8 (60 min minimum, $23.92/h), a replacement for its old
// bare-metal node is a VM: a re-buy wastes at most an hour of a VM
// ($23.92). The hold still holds the bare-metal node for its own offer's
// break-even, up to 8 h.
//
// Input: fleet "a", one bm-mi300x-8 node; a job from its start to 8h30m;
// at 8h the spec changes to vm-mi300x-8 (Nodes 1, IdleTimeout 5 min); the
// job is given back at 8h30m; no job comes for 10 h.
// Keeping the node longer than a VM's minimum costs more than any re-buy
// could; current code keeps it 8 h ($216.96).
func TestTesterBGHoldAfterSpecChangeWeighsTheOldOffer(t *testing.T) {
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
	})
}
