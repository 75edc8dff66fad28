package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Shrink keeps the node with the most paid time left, whatever its status
// (tester U). A Hot Aisle bare-metal fleet at MinNodes 1: its node I has
// run a job past its 8-hour minimum and bills per minute; a second job
// 8h10 in finds no idle node and the fleet grows to 2 (a new server N, 8
// hours charged at once); four minutes later, N still installing, the
// first job ends and the second is cancelled: Nodes 1 again. I goes (no
// paid time left), N stays. Shrink used to release provisioning and
// booting nodes before idle ones: N waited 8 hours never used while I
// billed every minute (24h19m in all instead of about 16h25m).
func TestShrinkKeepsThePrepaidNodeStillInstalling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLiveWorld(t, fleet.Policy{})
		defer w.finish()
		ctx := context.Background()
		s := fleet.Spec{Name: "f", Nodes: 1, MinNodes: 1, IdleTimeout: 30 * time.Minute, Requirements: hotType("bm-mi300x-8")}
		require.NoError(t, w.m.Apply(ctx, s))
		first, ok := w.acquire("f", time.Hour)
		require.True(t, ok, "no node for the first job")
		from := w.ledger()[0].From
		time.Sleep(time.Until(from.Add(8*time.Hour + 10*time.Minute)))
		_, err := w.m.Acquire(ctx, "f")
		require.ErrorIs(t, err, fleet.ErrNoIdle, "the only node is busy")
		s.Nodes = 2
		require.NoError(t, w.m.Apply(ctx, s))
		time.Sleep(4 * time.Minute)
		require.NoError(t, w.m.MarkIdle(first.ID))
		s.Nodes = 1
		require.NoError(t, w.m.Apply(ctx, s))
		time.Sleep(5 * time.Minute)
		var second fleet.Instance
		for _, in := range w.m.Instances("f") {
			if in.ID != first.ID {
				second = in
			}
		}
		require.NotEmpty(t, second.ID, "the second node")
		now := map[string]fleet.Status{}
		for _, in := range w.m.Instances("f") {
			now[in.ID] = in.Status
		}
		assert.Contains(t, []fleet.Status{fleet.StatusTerminating, fleet.StatusTerminated}, now[first.ID],
			"the node past its minimum (no paid time left) is the one released")
		assert.NotContains(t, []fleet.Status{fleet.StatusTerminating, fleet.StatusTerminated}, now[second.ID],
			"the node with 8 prepaid hours left is kept")
		time.Sleep(8 * time.Hour)
		var total time.Duration
		for _, c := range w.ledger() {
			total += c.Billed
			t.Logf("%s billed %v (live %v), rented %v after the first", c.ResourceID, c.Billed, c.Live, c.From.Sub(from))
		}
		assert.Less(t, total, 17*time.Hour, "two machines billed for one over 8 hours")
	})
}
