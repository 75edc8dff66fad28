package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// S08: "no VPC without a live member once the fleet settles (create the
// VPC after the first instance, or roll back)". A cluster fleet scaled to
// zero nodes (Apply with Nodes 0, the usual way to park a fleet between
// jobs) has no member left, yet its VPC is kept for hours: the VPC outlives
// its last member although a new one would be created after the next first
// member anyway (and Vultr accounts have a VPC limit).
func TestTesterMClusterScaledToZeroKeepsNoVPC(t *testing.T) {
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
