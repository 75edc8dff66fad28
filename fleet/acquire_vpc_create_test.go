package fleet_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cluster fleet (PlacementCluster, Vultr) whose VPC create Vultr refuses
// outright for good (400, the account's VPC quota reached). Acquire's doc:
// a cluster node is handed out once "its attach confirmed, or given up with
// EventVPCUnavailable". The create's refusal is said with
// EventVPCUnavailable ("creating the fleet's VPC failed; retrying"), but
// the node's VPCDone is never set (no VPC, so no attach is ever tried or
// given up): the node, ready and billing, is never handed out. Before this
// session (a579a1f) it was handed out at once, as a node whose attach was
// given up is.
// Before (tester AR): no node handed out in 3 h (ErrNoIdle every 10 s); the node
// billed the whole time (3 h of a Vultr VM for no job), 40+ VPC create
// calls refused, and the fleet never gets a second node either.
func TestClusterNodeHandedOutWhileTheVPCCannotBeCreated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "POST /v2/vpcs", Status: 400,
			Message: "You have reached the maximum number of VPC networks for this account."}))
		s := clusterSpec("mesh", 1)
		s.IdleTimeout = 0
		require.NoError(t, e.m.Apply(t.Context(), s))
		start := time.Now()
		var got fleet.Instance
		ok := e.runUntil(3*time.Hour, func() bool {
			inst, err := e.m.Acquire(t.Context(), "mesh")
			if errors.Is(err, fleet.ErrNoIdle) {
				return false
			}
			require.NoError(t, err)
			got = inst
			return true
		})
		recs := e.m.Records()
		var ready, done int
		for _, r := range recs {
			if !r.Instance.Ready.IsZero() {
				ready++
			}
			if r.VPCDone {
				done++
			}
		}
		t.Logf("after %v: handed out %q; %d record(s), %d ready, %d VPCDone; VPCUnavailable events %d; VPC creates refused %d",
			time.Since(start).Round(time.Minute), got.ID, len(recs), ready, done, e.count(fleet.EventVPCUnavailable),
			calls(e.vultr.Calls(), "POST /v2/vpcs", 400))
		require.Positive(t, e.count(fleet.EventVPCUnavailable), "the VPC create's refusal is said")
		assert.True(t, ok, "a ready cluster node whose VPC could not be created was never handed out in 3 h")
	})
}
