package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node whose Release is recorded (returned nil) and not yet carried out
// must not be handed out by Acquire (Acquire's doc: "never one whose
// release is decided ... a node whose Release or MarkBusy is recorded but
// not yet carried out counts as taken"). A MarkIdle of the same node
// recorded after the Release (a worker finishing while an operator
// releases it) must not undo that: the release stands, MarkIdle of a node
// being released is a no-op when carried out.
//
// Expected: Acquire answers ErrNoIdle (the only node is being released).
// Got: Acquire hands the node out (the queued MarkIdle cancels the queued
// Release in the pending-intent bookkeeping), and the next step releases
// the node under the job that just got it.
func TestAcquireSkipsAReleasedNodeMarkedIdleAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), spec("ri", 1, vultrVM("ewr"))))
		require.True(t, e.runUntil(time.Hour, func() bool {
			in := e.m.Instances("ri")
			return len(in) == 1 && in[0].Status == fleet.StatusIdle
		}), "not ready")
		x := e.only("ri")
		_, err := e.m.Release(t.Context(), x.ID)
		require.NoError(t, err)
		// The MarkIdle is refused as it is once the release is carried out
		// (the node is terminating, not ready); were it recorded, the
		// release would stand all the same (foldMarks).
		assert.Error(t, e.m.MarkIdle(x.ID), "a node whose Release is recorded is not ready")
		got, err := e.m.Acquire(t.Context(), "ri")
		assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out %s, whose Release is recorded", got.ID)
		require.NoError(t, e.m.Delete(t.Context(), "ri"))
		e.run(3 * time.Hour)
		e.assertNothingLeft()
	})
}
