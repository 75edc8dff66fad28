package fleet_test

import (
	"context"
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
// same Store and with an empty one). With an empty Store the restarted
// Manager creates the fleet's VPC before the late one exists; the sweeps
// of its first hour list VPCs too, find the late one and collect it as an
// orphan.
func TestVPCCreateLandingLateAfterACrash(t *testing.T) {
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
func TestClusterFleetNeverGrowsOutsideItsRegions(t *testing.T) {
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

// "5xx after commit" on a VPC attach (Vultr attached the server, then
// answered 500): the next attempt is refused with 400 "The VPC network is
// already attached to this server." A user expects the member counted as
// attached (its VPC listing says so: the Manager lists the server's VPCs
// after every attach, and before attaching again) and attach calls to
// stop, not one a minute for ever.
func TestAttachCommittedThen500IsConfirmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		// Vultr refuses attaches ("Server is not active yet") for the first
		// minutes; from 6:00 every attach takes effect and answers 500 for 3
		// minutes.
		e.run(6 * time.Minute)
		require.Zero(t, e.count(fleet.EventVPCAttached), "no member attached before the fault")
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: routeAttach, Status: 500, AfterCommit: true, Duration: 3 * time.Minute}))
		e.run(54 * time.Minute)
		before := calls(e.vultr.Calls(), routeAttach, 0)
		e.run(time.Hour)
		later := calls(e.vultr.Calls(), routeAttach, 0) - before
		t.Logf("attach calls: first hour %d, second hour %d; attached events %d", before, later, e.count(fleet.EventVPCAttached))
		assert.Zero(t, later, "attach attempts stop once the member is attached")
		assert.Equal(t, 2, e.count(fleet.EventVPCAttached), "both members confirmed attached")
		for id, vpcs := range e.vpcMembers("mesh") {
			assert.Len(t, vpcs, 1, "member %s in exactly one VPC", id)
		}
		e.teardownFleet("mesh")
	})
}

// frozenStore stops persisting writes once frozen (they return nil): what
// it holds is the Store as of a crash at the moment it was frozen.
type frozenStore struct {
	*fleet.MemoryStore
	frozen bool // set between passes only
}

func (s *frozenStore) PutFleet(ctx context.Context, f fleet.FleetRecord) error {
	if s.frozen {
		return nil
	}
	return s.MemoryStore.PutFleet(ctx, f)
}

func (s *frozenStore) PutInstance(ctx context.Context, r fleet.InstanceRecord) error {
	if s.frozen {
		return nil
	}
	return s.MemoryStore.PutInstance(ctx, r)
}

// The same kind across a crash: members are attached, and the process dies
// before the Store learns it (a crash between the attach and the store
// write). Restarted with that Store, the Manager attaches again and Vultr
// answers 400 "already attached". A user expects the attachment confirmed
// from the server's VPC listing and attach calls to stop.
func TestCrashBetweenAttachAndStoreWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		fs := &frozenStore{MemoryStore: fleet.NewMemoryStore()}
		e.m.Close()
		e.m = e.manager(fs)
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		require.True(t, e.runUntil(30*time.Minute, func() bool { return e.count(fleet.EventVPCCreated) == 1 }))
		require.Zero(t, e.count(fleet.EventVPCAttached))
		fs.frozen = true
		require.True(t, e.runUntil(30*time.Minute, func() bool { return e.count(fleet.EventVPCAttached) == 2 }))
		e.m.Close()
		fs.frozen = false

		e.m = e.manager(fs)
		e.run(time.Hour)
		before := calls(e.vultr.Calls(), routeAttach, 0)
		e.run(time.Hour)
		later := calls(e.vultr.Calls(), routeAttach, 0) - before
		t.Logf("attach calls in the second hour after the restart: %d", later)
		assert.LessOrEqual(t, later, 2, "attach attempts stop: the members are attached")
		for id, vpcs := range e.vpcMembers("mesh") {
			assert.Len(t, vpcs, 1, "member %s in exactly one VPC", id)
		}
		e.teardownFleet("mesh")
	})
}
