package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An orchestrator moves a fleet to another plan the way schedulers do it:
// Apply with Nodes 0 (the old nodes go, by the default release policy at
// the end of their paid window), then Apply with Nodes 1 and the new
// instance type. Growing "first takes back instances whose release still
// waits" (Spec.IdleTimeout doc) — but it takes back the OLD plan's node,
// which the new spec excludes, and creates nothing: Acquire hands a job
// that needs two GPUs a one-GPU node. Apply's doc: "Changed requirements
// ... apply to instances created from then on"; a node taken back is not
// a member the spec left alone, it is chosen for the new spec.
//
// Before (tester AQ): after Apply{Nodes 1, vm-mi300x-2}, the fleet's only
// member is the vm-mi300x-1 node (taken back, EventReleaseCancelled) and
// Acquire returns it; no vm-mi300x-2 is created. Expected: the old node
// kept releasing at its window's end, a vm-mi300x-2 created and handed out.
// Same on Vultr (vcg-a100-12c-120g-80vram → vcg-a100-3c-30g-20vram: the
// dearer whole-A100 VM is kept, billed every hour it serves, instead of the
// quarter-A100 plan asked for: $2.397 an hour instead of $0.599).
// Money: the job cannot run on the node it is given; the orchestrator must
// Release it (a new minimum bought for the replacement meanwhile, and the
// wrong node's reservation lost).
// Cause: fleet/provision.go reclaim took back any release for
// "scale down" or "idle" of the fleet without checking the node still
// meets f.Spec.Requirements (Requirements.Matches / offersFor).
func TestGrowAfterAPlanChangeCreatesTheNewPlan(t *testing.T) {
	for _, c := range []struct{ name, from, to string }{
		{"hotaisle", "vm-mi300x-1", "vm-mi300x-2"},
		{"vultr", "vcg-a100-12c-120g-80vram", "vcg-a100-3c-30g-20vram"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				req := func(typ string) fleet.Requirements {
					if c.name == "vultr" {
						return vultrType(typ)
					}
					return hotType(typ)
				}
				old := e.idleFleet("p", 1, 5*time.Minute, req(c.from))[0]
				s := spec("p", 0, req(c.from))
				s.IdleTimeout = 5 * time.Minute
				require.NoError(t, e.m.Apply(t.Context(), s))
				e.run(time.Minute)
				s = spec("p", 1, req(c.to))
				s.IdleTimeout = 5 * time.Minute
				require.NoError(t, e.m.Apply(t.Context(), s))
				var got fleet.Instance
				require.True(t, e.runUntil(2*time.Hour, func() bool {
					var err error
					got, err = e.m.Acquire(t.Context(), "p")
					return err == nil
				}), "no node handed out")
				assert.Equal(t, c.to, got.Offer.InstanceType, "Acquire handed out %s (%s) under a spec asking for %s; the old node was %s",
					got.ID, got.Offer.InstanceType, c.to, old.ID)
			})
		})
	}
}
