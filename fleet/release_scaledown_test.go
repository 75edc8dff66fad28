package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An orchestrator scales a fleet to zero (Apply Nodes 0: the node's release
// waits for the end of its paid window), then releases that node
// explicitly with Release (its agent misbehaved, say; Release answers the
// time it will go), then grows the fleet again for a new job. Growing
// "first takes back instances whose release still waits" for scale-down or
// idleness — and the explicitly released node is among them: Release on a
// node whose scale-down release was already decided changes nothing
// (its reason stays "scale down"), so the node is taken back
// (EventReleaseCancelled), handed out again by Acquire, and never released
// as Release said. Release's doc: "records that one instance ... is to be
// released"; a node released with Release is not taken back otherwise
// (reclaim skips reason "released").
//
// Before (tester AQ) (Hot Aisle VM and Vultr VM): Release answered nil and a
// time inside the node's window; after Apply Nodes 1 the released node is
// idle again and Acquire hands it out; no replacement is created.
// Now: the released node goes at the time Release answered, and a new
// node serves the fleet. Money: a node the orchestrator gave up as bad keeps
// billing (each later unit of it) and takes jobs.
// Release with WithReleasePolicy(ReleaseNow) is not absorbed (it re-decides
// the release); the default policy, and ReleaseCompat, are.
// Cause: fleet/release.go requestRelease returned at once when a
// Termination exists (releaseInstance cannot mark it "released"), and
// fleet/provision.go reclaim trusts Termination.Reason.
func TestReleaseOfAScaleDownIsNotTakenBack(t *testing.T) {
	for _, c := range []struct {
		name string
		req  fleet.Requirements
	}{
		{"hotaisle", hotType("vm-mi300x-1")},
		{"vultr", vultrType("vcg-a100-12c-120g-80vram")},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				x := e.idleFleet("r", 1, 5*time.Minute, c.req)[0]
				s := spec("r", 0, c.req)
				s.IdleTimeout = 5 * time.Minute
				require.NoError(t, e.m.Apply(t.Context(), s))
				e.run(20 * time.Second)
				at, err := e.m.Release(t.Context(), x.ID)
				require.NoError(t, err)
				require.True(t, at.After(time.Now()), "the release waits for the window (%v)", at)
				e.run(20 * time.Second)
				s.Nodes = 1
				require.NoError(t, e.m.Apply(t.Context(), s))
				var got fleet.Instance
				require.True(t, e.runUntil(2*time.Hour, func() bool {
					var err error
					got, err = e.m.Acquire(t.Context(), "r")
					return err == nil
				}), "no node handed out")
				assert.NotEqual(t, x.ID, got.ID, "Acquire handed out the node released with Release (it answered %v)", at.Sub(x.Created))
				assert.Zero(t, e.count(fleet.EventReleaseCancelled), "a Release was cancelled by growth")
			})
		})
	}
}
