package fleet_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestS07HotAisleCreatesCommittedThen502: S07 with other inputs: every
// Hot Aisle VM provision of a 3-node fleet commits and then answers 502
// (Hot Aisle takes no label at create). Exactly 3 VMs must exist, all
// labelled and members; after Delete none is left.
func TestS07HotAisleCreatesCommittedThen502(t *testing.T) {
	for _, status := range []int{500, 502, 504} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				require.NoError(t, e.hot.Inject(sim.Fault{Route: routeHotCreate, Times: 3, Status: status, AfterCommit: true}))
				require.NoError(t, e.m.Apply(t.Context(), spec("f", 3, hotType("vm-mi300x-1"))))
				e.run(40 * time.Minute)
				t.Logf("live VMs %d, provisions %d, unlabelled %d, adopted %d, unresolved %d", e.liveServers(),
					calls(e.hot.Calls(), routeHotCreate, 0), e.count(fleet.EventUnlabelledFound), e.count(fleet.EventInstanceAdopted),
					e.count(fleet.EventCreateUnresolved))
				assert.Equal(t, 3, e.liveServers(), "one server per wanted node")
				assert.Len(t, activeOf(e.m.Instances("f")), 3)
				require.NoError(t, e.m.Delete(t.Context(), "f"))
				require.True(t, e.runUntil(3*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
				e.run(20 * time.Minute)
				e.assertNothingLeft()
			})
		})
	}
}

// TestS05OutageAcrossTheMinimumEnd: S05 with other inputs: a Hot Aisle 2x
// VM (60-minute minimum) deleted at +5 min waits for its minimum; the
// cloud is unreachable from +50 to +80 min, across the moment the release
// is due. The release happens once the cloud is back, nothing is left, and
// the bill is the alive time (about 80 minutes, at most 85 whole
// minutes), not more.
func TestS05OutageAcrossTheMinimumEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("h", 1, hotType("vm-mi300x-2"))))
		e.run(5 * time.Minute)
		require.NoError(t, e.m.Delete(t.Context(), "h"))
		e.run(45 * time.Minute)
		e.hot.Outage(30 * time.Minute)
		require.True(t, e.runUntil(2*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		e.assertNothingLeft()
		l := e.hot.Ledger()
		var billed time.Duration
		for _, c := range l.Charges {
			billed += c.Billed
		}
		t.Logf("billed %.2f USD, %s", l.TotalUSD, billed)
		// In whole minutes (Hot Aisle bills per minute): a USD limit of
		// 5.98*85/60 is below the ledger's micro-dollar rounding of 85 minutes.
		assert.LessOrEqual(t, billed, 85*time.Minute, "billed within alive time")
	})
}
