package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Found by the crash fault schedules under a short OrphanGrace
// (GPUFLEET_SCHEDULE_POLICY=OrphanGrace=1m,CreateLookupGrace=1m, seeds
// 146, 152, 232 of TestCrashSchedules: a restart with an empty Store whose
// re-Apply came after the orphans' grace). The kind: an orphan whose
// release waits for its reservation window (Vultr bills whole hours, so
// the delete is deferred to the end of the hour already paid) is still a
// running, paid server labelled for its fleet; when that fleet is applied
// meanwhile the Manager leaves the orphan to be deleted and creates as many
// new servers. The Manager already reuses members whose scale-down or idle
// release waits for its window ("they are paid anyway, so growing the
// fleet reuses them instead of creating new ones"); a user expects the
// same of an orphan of the fleet (the package documentation: an orphan is
// released "unless a fleet claims it", and nothing has been released yet),
// not two servers billed for one wanted node.
//
// Here with the default Policy: a process creates a 2-node Vultr fleet and
// dies; the next process (same owner, empty Store) runs 12 minutes (past
// OrphanGrace, 10 min) before the program applies the fleet again.
// Expected: the 2 orphans, still running and paid until the hour ends, are
// taken back; 2 creates in all. Got: 2 more servers created.
func TestOrphanWaitingForItsWindowIsReclaimedByItsFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		ctx := t.Context()
		require.NoError(t, e.m.Apply(ctx, spec("f", 2, vultrVM("ewr"))))
		require.True(t, e.runUntil(10*time.Minute, func() bool { return len(ready(e.m.Instances("f"))) == 2 }))
		e.m.Close() // the process dies; its servers run on

		e.m = e.manager(fleet.NewMemoryStore())
		e.run(12 * time.Minute)
		require.Positive(t, e.count(fleet.EventOrphanFound), "the restarted Manager saw the orphans")
		require.Equal(t, 2, liveOf(e, "vultr"), "the orphans still run: their release waits for the end of the paid hour")

		require.NoError(t, e.m.Apply(ctx, spec("f", 2, vultrVM("ewr"))))
		e.run(10 * time.Minute)
		assert.Equal(t, 2, calls(e.vultr.Calls(), vultrCreate, 0),
			"servers created; the fleet's own orphans were still running and paid: %v", e.eventsOf(fleet.EventReleaseRequested))
		assert.LessOrEqual(t, liveOf(e, "vultr"), 2, "servers billing for a 2-node fleet")
	})
}

// ready keeps the idle or busy instances.
func ready(insts []fleet.Instance) []fleet.Instance {
	var out []fleet.Instance
	for _, i := range insts {
		if i.Status == fleet.StatusIdle || i.Status == fleet.StatusBusy {
			out = append(out, i)
		}
	}
	return out
}
