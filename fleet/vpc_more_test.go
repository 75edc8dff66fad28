package fleet_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const routeVPCCreate = "POST /v2/vpcs"

// assertOneVPC checks that at most one VPC was ever created and every live
// member of the fleet sits in the same live VPC.
func assertOneVPC(t *testing.T, e *env, fleetName string) {
	t.Helper()
	assert.Equal(t, 1, calls(e.vultr.Calls(), routeVPCCreate, 0), "one VPC create for the fleet")
	assert.LessOrEqual(t, live(e.vultr.Resources(), "vpc"), 1, "live VPCs")
	var vpc string
	for _, inst := range activeOf(e.m.Instances(fleetName)) {
		ids, err := e.vp.InstanceVPCs(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.Len(t, ids, 1, "member %s in exactly one VPC", inst.ID)
		if len(ids) == 1 {
			if vpc == "" {
				vpc = ids[0]
			}
			assert.Equal(t, vpc, ids[0], "members share one VPC")
		}
	}
}

func (e *env) teardownFleet(name string) {
	e.t.Helper()
	require.NoError(e.t, e.m.Delete(e.t.Context(), name))
	require.True(e.t, e.runUntil(3*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }), "fleet deleted")
	e.run(30 * time.Minute) // orphans' grace
	e.assertNothingLeft()
}

// TestLostStoreWhileVPCListFails: after a restart with an empty Store, the
// VPC listing answers 500 for 15 minutes while server listings work; the
// re-applied cluster fleet must not get a second VPC before its labelled VPC
// could be listed.
func TestLostStoreWhileVPCListFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		e.run(20 * time.Minute)
		require.Equal(t, 1, live(e.vultr.Resources(), "vpc"))
		e.m.Close()
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "GET /v2/vpcs", Status: http.StatusInternalServerError, Duration: 15 * time.Minute}))
		e.m = e.manager(fleet.NewMemoryStore())
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		e.run(30 * time.Minute)
		t.Logf("VPC creates %d, live VPCs %d, adopted %d", calls(e.vultr.Calls(), routeVPCCreate, 0), live(e.vultr.Resources(), "vpc"), e.count(fleet.EventVPCAdopted))
		assertOneVPC(t, e, "mesh")
		e.teardownFleet("mesh")
	})
}

// TestRestartBetweenVPCCreateAndAttach: the Manager stops right after its
// fleet's VPC is created, before any member is attached; restarted with the
// same Store and with an empty one, the fleet keeps one VPC and its members
// join it.
func TestRestartBetweenVPCCreateAndAttach(t *testing.T) {
	for _, lost := range []bool{false, true} {
		name := "same-store"
		if lost {
			name = "empty-store"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				// Attach refused for a while so that no attach lands before the crash.
				require.NoError(t, e.vultr.Inject(sim.Fault{Route: "POST /v2/instances/{id}/vpcs/attach", Status: 500,
					Message: "Unable to attach VPC", Times: 1}))
				require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
				require.True(t, e.runUntil(30*time.Minute, func() bool { return e.count(fleet.EventVPCCreated) == 1 }))
				e.m.Close()
				store := e.store
				if lost {
					store = fleet.NewMemoryStore()
				}
				e.m = e.manager(store)
				require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
				e.run(30 * time.Minute)
				assert.Len(t, activeOf(e.m.Instances("mesh")), 2)
				assertOneVPC(t, e, "mesh")
				e.teardownFleet("mesh")
			})
		})
	}
}

// TestAttachAlwaysFails: every attach answers 500 "Unable to attach VPC";
// the members run without the VPC after the bounded attempts, the fleet
// still has one VPC, attach calls stop, and teardown leaves nothing.
func TestAttachAlwaysFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "POST /v2/instances/{id}/vpcs/attach", Status: 500, Message: "Unable to attach VPC"}))
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 3)))
		e.run(time.Hour)
		first := calls(e.vultr.Calls(), "POST /v2/instances/{id}/vpcs/attach", 0)
		e.run(time.Hour)
		later := calls(e.vultr.Calls(), "POST /v2/instances/{id}/vpcs/attach", 0) - first
		t.Logf("attach calls: first hour %d, second hour %d; unavailable events %d", first, later, e.count(fleet.EventVPCUnavailable))
		assert.Zero(t, later, "attach attempts are bounded")
		assert.Len(t, activeOf(e.m.Instances("mesh")), 3, "members run without the VPC")
		assert.LessOrEqual(t, calls(e.vultr.Calls(), routeVPCCreate, 0), 1)
		e.teardownFleet("mesh")
	})
}

// TestVPCDeleteRefusedForHours: the VPC delete is refused "servers are
// attached" for two hours after the members are gone; the fleet is not
// reported deleted before the VPC is, and nothing is left afterwards.
func TestVPCDeleteRefusedForHours(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		e.run(15 * time.Minute)
		require.Equal(t, 1, live(e.vultr.Resources(), "vpc"))
		require.NoError(t, e.vultr.RefuseVPCDelete(0))
		require.NoError(t, e.m.Delete(t.Context(), "mesh"))
		e.run(2 * time.Hour)
		assert.Zero(t, e.count(fleet.EventFleetDeleted), "not deleted while its VPC lives")
		assert.Equal(t, 1, live(e.vultr.Resources(), "vpc"))
		refused := calls(e.vultr.Calls(), "DELETE /v2/vpcs/{id}", 0)
		t.Logf("VPC delete attempts in 2 h: %d", refused)
		assert.LessOrEqual(t, refused, 90, "VPC delete backs off (2-minute cap)")
		e.vultr.ClearFaults()
		require.True(t, e.runUntil(time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		e.assertNothingLeft()
	})
}

// TestTwoClusterFleetsOneRegion: two cluster fleets in one region get one
// VPC each, members never cross; deleting one leaves the other's VPC; after
// a lost Store each adopts its own.
func TestTwoClusterFleetsOneRegion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("a", 2)))
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("b", 2)))
		e.run(30 * time.Minute)
		require.Equal(t, 2, live(e.vultr.Resources(), "vpc"))
		vpcOf := func(name string) map[string]bool {
			out := map[string]bool{}
			for _, inst := range activeOf(e.m.Instances(name)) {
				ids, err := e.vp.InstanceVPCs(t.Context(), inst.ID)
				require.NoError(t, err)
				for _, id := range ids {
					out[id] = true
				}
			}
			return out
		}
		a, b := vpcOf("a"), vpcOf("b")
		assert.Len(t, a, 1)
		assert.Len(t, b, 1)
		for id := range a {
			assert.False(t, b[id], "fleets share no VPC")
		}
		e.m.Close()
		e.m = e.manager(fleet.NewMemoryStore())
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("a", 2)))
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("b", 2)))
		e.run(30 * time.Minute)
		assert.Equal(t, 2, calls(e.vultr.Calls(), routeVPCCreate, 0), "no VPC created after the lost store")
		assert.Equal(t, a, vpcOf("a"))
		assert.Equal(t, b, vpcOf("b"))
		require.NoError(t, e.m.Delete(t.Context(), "a"))
		require.True(t, e.runUntil(2*time.Hour, func() bool { return len(e.m.Fleets()) == 1 }))
		e.run(30 * time.Minute)
		assert.Equal(t, 1, live(e.vultr.Resources(), "vpc"), "b's VPC stays")
		assert.Equal(t, b, vpcOf("b"))
		e.teardownFleet("b")
	})
}
