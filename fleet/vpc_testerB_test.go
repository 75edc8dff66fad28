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

const routeAttach = "POST /v2/instances/{id}/vpcs/attach"

// vpcMembers maps each active member of fleetName to the VPCs the provider
// lists for it.
func (e *env) vpcMembers(fleetName string) map[string][]string {
	out := map[string][]string{}
	for _, inst := range activeOf(e.m.Instances(fleetName)) {
		ids, err := e.vp.InstanceVPCs(e.t.Context(), inst.ID)
		require.NoError(e.t, err)
		out[inst.ID] = ids
	}
	return out
}

// Issue 16 point 3 (a fleet never has two VPCs; its members are attached to
// the one it keeps) with a process killed during its VPC create: the VPC
// create is sent, the process dies, and the provider commits the VPC 8
// minutes later (past CreateLookupGrace). Restarted with the same Store and
// with an empty one, and run for an hour: the fleet's members share one
// VPC, at most one VPC is live, and Delete leaves nothing (issue 10 point
// 5: everything the Manager creates is collected, after a restart with the
// same Store and with an empty one). The same-store case holds. With an
// empty Store the restarted Manager lists VPCs once at start (before the
// late VPC exists), creates the fleet's VPC, and never lists VPCs again:
// the crashed process's labelled VPC stays for ever.
func TestTesterBVPCCreateLandingLateAfterACrash(t *testing.T) {
	for _, lost := range []bool{false, true} {
		name := map[bool]string{false: "same-store", true: "empty-store"}[lost]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				require.NoError(t, e.vultr.Inject(sim.Fault{Route: routeVPCCreate, Latency: 8 * time.Minute, Times: 1}))
				require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
				require.True(t, e.runUntil(30*time.Minute, func() bool { return len(e.vultr.Faults()) > 0 }),
					"the VPC create was sent")
				e.m.Close()
				store := e.store
				if lost {
					store = fleet.NewMemoryStore()
				}
				e.m = e.manager(store)
				require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
				e.run(time.Hour)
				t.Logf("VPC creates %d, live VPCs %d, members %v", calls(e.vultr.Calls(), routeVPCCreate, 0), live(e.vultr.Resources(), "vpc"), e.vpcMembers("mesh"))
				assert.Equal(t, 1, live(e.vultr.Resources(), "vpc"), "one live VPC")
				var one string
				for id, vpcs := range e.vpcMembers("mesh") {
					if assert.Len(t, vpcs, 1, "member %s in exactly one VPC", id) {
						if one == "" {
							one = vpcs[0]
						}
						assert.Equal(t, one, vpcs[0], "members share one VPC")
					}
				}
				e.teardownFleet("mesh")
			})
		})
	}
}

// A cluster fleet of 2 in ewr applied again with 3 nodes and only "ord"
// allowed (Requirements.Regions). Re-apply keeps the members, and a
// cluster's VPC is regional, so the third node cannot both join the VPC and
// respect the new requirements. A user expects the Manager never to buy a
// machine in a region the spec excludes (Requirements documents Regions as
// the allowed regions): it should refuse the Apply or create nothing
// (NoOffers) until it can. Today the fleet's anchor (first member's region)
// silently replaces Requirements.Regions, and a third server is bought in
// ewr.
func TestTesterBClusterFleetNeverGrowsOutsideItsRegions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		e.run(20 * time.Minute)
		require.Equal(t, 1, live(e.vultr.Resources(), "vpc"))
		before := map[string]bool{}
		for _, inst := range e.m.Instances("mesh") {
			before[inst.ID] = true
		}
		moved := clusterSpec("mesh", 3)
		moved.Requirements.Regions = []string{"ord"}
		if err := e.m.Apply(t.Context(), moved); err != nil {
			t.Logf("Apply refused: %v", err) // an acceptable answer
		}
		e.run(time.Hour)
		for _, inst := range e.m.Instances("mesh") {
			if !before[inst.ID] {
				assert.Equal(t, "ord", inst.Offer.Region, "instance %s created after the re-apply is outside Requirements.Regions", inst.ID)
			}
		}
		before2 := calls(e.vultr.Calls(), routeAttach, 0)
		e.run(time.Hour)
		assert.LessOrEqual(t, calls(e.vultr.Calls(), routeAttach, 0)-before2, 2, "attach attempts bounded")
		assert.LessOrEqual(t, live(e.vultr.Resources(), "vpc"), 1, "one VPC")
		e.teardownFleet("mesh")
	})
}
