package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idleIn counts the fleet's idle instances.
func idleIn(e *env, name string) int {
	n := 0
	for _, inst := range e.m.Instances(name) {
		if inst.Status == fleet.StatusIdle {
			n++
		}
	}
	return n
}

// A cluster fleet parked at zero, whose VPC delete fails with HTTP 500
// (nothing deleted; a VPC endpoint outage), is applied with 2 nodes again.
// The old VPC is still there and usable: a listing shows it, the fleet
// keeps it and grows (it used to create nothing until the outage ended).
func TestRegrowNotStalledByFailingVPCDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(2)))
		e.run(20 * time.Minute)
		assertClusterInVPC(t, e, 2)
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "DELETE /v2/vpcs/{id}", Status: 500, Duration: 3 * time.Hour}))
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(0)))
		require.True(t, e.runUntil(30*time.Minute, func() bool {
			return e.liveServers() == 0 && calls(e.vultr.Calls(), "DELETE /v2/vpcs/{id}", 500) > 0
		}))
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(2)))
		ok := e.runUntil(time.Hour, func() bool { return idleIn(e, "cl") == 2 })
		assert.True(t, ok, "an hour after growing back to 2 (VMs boot in 2.5 min): %d idle, %d live servers, %d failed VPC deletes; events %v",
			idleIn(e, "cl"), e.liveServers(), calls(e.vultr.Calls(), "DELETE /v2/vpcs/{id}", 500), summary(e))
	})
}

// The same with deletes that take effect and answer 500 (their answer is
// worth nothing): a listing shows the VPC gone, and the fleet growing
// again gets a new one, its members attached to it.
func TestRegrowAfterAVPCDeleteWhoseAnswerWasLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(2)))
		e.run(20 * time.Minute)
		assertClusterInVPC(t, e, 2)
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "DELETE /v2/vpcs/{id}", Status: 500, AfterCommit: true, Times: 1}))
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(0)))
		require.True(t, e.runUntil(30*time.Minute, func() bool {
			return e.liveServers() == 0 && calls(e.vultr.Calls(), "DELETE /v2/vpcs/{id}", 500) > 0
		}))
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(2)))
		ok := e.runUntil(time.Hour, func() bool { return idleIn(e, "cl") == 2 })
		require.True(t, ok, "grown back: %d idle; events %v", idleIn(e, "cl"), summary(e))
		e.run(10 * time.Minute)
		assertClusterInVPC(t, e, 2)
	})
}
