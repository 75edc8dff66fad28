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

// S08: "no VPC without a live member once the fleet settles (create the
// VPC after the first instance, or roll back)". A cluster fleet scaled to
// zero nodes (Apply with Nodes 0, the usual way to park a fleet between
// jobs) has no member left, yet its VPC is kept for hours: the VPC outlives
// its last member although a new one would be created after the next first
// member anyway (and Vultr accounts have a VPC limit).
func TestClusterScaledToZeroKeepsNoVPC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		sp := fleet.Spec{Name: "cl", Nodes: 2, Placement: fleet.PlacementCluster,
			Requirements: fleet.Requirements{Providers: []string{"vultr"}, InstanceTypes: []string{"vc2-2c-4gb"}, Regions: []string{"ewr"}}}
		require.NoError(t, e.m.Apply(t.Context(), sp))
		e.run(20 * time.Minute)
		require.Equal(t, 2, e.liveServers())
		require.Equal(t, 1, live(e.vultr.Resources(), "vpc"))

		sp.Nodes = 0
		require.NoError(t, e.m.Apply(t.Context(), sp))
		e.run(3 * time.Hour)
		require.Zero(t, e.liveServers(), "both members released")
		assert.Zero(t, live(e.vultr.Resources(), "vpc"),
			"the fleet has had no member for hours, its VPC is still there (events %v)", summary(e))
	})
}

// cl0Spec is a Vultr cluster fleet of n cheap VMs in ewr.
func cl0Spec(n int) fleet.Spec {
	return fleet.Spec{Name: "cl", Nodes: n, Placement: fleet.PlacementCluster,
		Requirements: fleet.Requirements{Providers: []string{"vultr"}, InstanceTypes: []string{"vc2-2c-4gb"}, Regions: []string{"ewr"}}}
}

// assertClusterInVPC checks that the fleet's live servers are all attached
// to the one live VPC, which the records name.
func assertClusterInVPC(t *testing.T, e *env, n int) {
	t.Helper()
	var vpcs []string
	for _, r := range e.vultr.Resources() {
		if r.Live() && r.Kind == "vpc" {
			vpcs = append(vpcs, r.ID)
		}
	}
	require.Len(t, vpcs, 1, "one VPC")
	insts := 0
	for _, inst := range e.m.Instances("cl") {
		if inst.Status != fleet.StatusIdle {
			continue
		}
		insts++
		assert.Equal(t, vpcs[0], inst.VPCID, "%s recorded in the live VPC", inst.ID)
		ids, err := e.vp.InstanceVPCs(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.Equal(t, []string{vpcs[0]}, ids, "%s attached to the live VPC", inst.ID)
	}
	assert.Equal(t, n, insts)
	assert.Equal(t, n, e.liveServers())
}

// Scaled to zero, then grown again: the VPC goes with the last member and
// a new one comes with the next first member; the members join it.
func TestClusterGrownAgainAfterZeroGetsANewVPC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(2)))
		e.run(20 * time.Minute)
		assertClusterInVPC(t, e, 2)
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(0)))
		require.True(t, e.runUntil(time.Hour, func() bool { return e.count(fleet.EventVPCDeleted) == 1 }))
		assert.Zero(t, live(e.vultr.Resources(), "vpc"))
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(2)))
		e.run(30 * time.Minute)
		assert.Equal(t, 2, e.count(fleet.EventVPCCreated))
		assertClusterInVPC(t, e, 2)
	})
}

// The fleet grows again while the delete of its VPC is under way (the
// call takes two minutes, longer than Policy.CallTimeout: its answer is
// lost, yet it takes effect): no create joins the VPC being deleted; once
// a delete has answered (404), the fleet gets a new VPC and every member
// is in it.
func TestClusterGrowingWhileItsVPCIsDeletedDoesNotJoinIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(2)))
		e.run(20 * time.Minute)
		assertClusterInVPC(t, e, 2)
		old := e.m.Instances("cl")[0].VPCID
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "DELETE /v2/vpcs/{id}", Times: 1, Latency: 2 * time.Minute}))
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(0)))
		before := len(e.vultr.Calls())
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = e.m.Run(ctx) }()
		for e.count(fleet.EventInstanceTerminated) < 2 {
			time.Sleep(time.Second)
		}
		time.Sleep(30 * time.Second)
		// The first delete is in the fake's latency now: grow.
		require.NoError(t, e.m.Apply(t.Context(), cl0Spec(2)))
		time.Sleep(40 * time.Minute)
		cancel()
		<-done
		var deleted time.Time // when the first delete that answered arrived
		for _, c := range e.vultr.Calls()[before:] {
			switch {
			case c.Route == "DELETE /v2/vpcs/{id}" && (c.Status == 204 || c.Status == 404) && deleted.IsZero():
				deleted = c.Time
			case c.Route == "POST /v2/instances":
				assert.False(t, deleted.IsZero() || c.Time.Before(deleted), "a create at %v before any VPC delete answered", c.Time)
			}
		}
		for _, inst := range e.m.Instances("cl") {
			if inst.Status != fleet.StatusTerminated {
				assert.NotEqual(t, old, inst.VPCID, "%s joined the VPC being deleted", inst.ID)
			}
		}
		assert.Zero(t, e.count(fleet.EventVPCUnavailable), "%v", e.eventsOf(fleet.EventVPCUnavailable))
		assertClusterInVPC(t, e, 2)
	})
}
