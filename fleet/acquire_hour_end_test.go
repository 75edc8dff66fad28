package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acquire must hand out the idle node "whose use saves the most (most paid
// time left)" (issue 17, point 3). A Vultr node given back with MarkIdle
// in the last seconds of its billed hour has its next hour bought: no
// delete can land in the hour any more, so the release logic keeps it to
// the next hour's last safe moment (lifecycle.go, boundarySlack; tester
// AN). Its paid time left is about an hour, not the seconds Acquire's
// paidUntil counts.
//
// Input: fleet of two Vultr VMs, A created 30 min before B; both busy;
// both given back with MarkIdle 5 s before A's hour ends; then Acquire.
// Now: A (about 60 min paid left, the next hour bought anyway).
// Before (tester AX): B (32 min paid left). A then idles 57 min of its second hour
// and is released at 1h57m (billed 2 h, busy 1 h of it), while the job
// runs on B: A's second hour is paid for nothing, and a job longer than
// 32 min buys B another hour too (one billed hour lost per such
// hand-out; $17.52 on Vultr MI300X bare metal).
// Window: the last boundarySlack (10 s) of the hour, as the loop sees it.
// Cause: acquire.go paidUntil / handOutFirst ignored that a node
// past its hour's last deletable moment has bought the next hour (the rule
// idleReleaseAt in lifecycle.go applies: end.Sub(from) < boundarySlack).
func TestAcquireCountsTheHourANodeAtItsHourEndHasBought(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		sp := spec("ax", 1, vultrVM("ewr"))
		sp.IdleTimeout = 10 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), sp))
		require.True(t, e.runUntil(time.Hour, func() bool {
			in := e.m.Instances("ax")
			return len(in) == 1 && in[0].Status == fleet.StatusIdle
		}), "A not ready")
		a := e.only("ax")
		_, err := e.m.Acquire(t.Context(), "ax")
		require.NoError(t, err)
		e.run(30 * time.Minute)
		sp.Nodes = 2
		require.NoError(t, e.m.Apply(t.Context(), sp))
		var b fleet.Instance
		require.True(t, e.runUntil(time.Hour, func() bool {
			for _, in := range e.m.Instances("ax") {
				if in.ID != a.ID && in.Status == fleet.StatusIdle {
					b = in
					return true
				}
			}
			return false
		}), "B not ready")
		got, err := e.m.Acquire(t.Context(), "ax")
		require.NoError(t, err)
		require.Equal(t, b.ID, got.ID)

		// Up to A's hour's end, less 5 s.
		hourEnd := a.Created.Add(time.Hour)
		e.run(time.Until(hourEnd.Add(-time.Minute)))
		time.Sleep(time.Until(hourEnd.Add(-5 * time.Second)))
		require.NoError(t, e.m.MarkIdle(b.ID))
		require.NoError(t, e.m.MarkIdle(a.ID))
		got, err = e.m.Acquire(t.Context(), "ax")
		require.NoError(t, err)
		assert.Equal(t, a.ID, got.ID, "handed out B (%v paid left) over A, whose next hour is bought (%v paid left)",
			b.Created.Add(time.Hour).Sub(time.Now()).Round(time.Minute), hourEnd.Add(time.Hour).Sub(time.Now()).Round(time.Minute))

		// Measure: run 2 h with the job on whichever node was handed out.
		e.run(2 * time.Hour)
		for _, r := range e.vultr.Resources() {
			if r.Kind == "instance" && r.ID == a.ID && !r.Deleted.IsZero() {
				// Before (tester AX): A billed 1h57m, idle for all of its second hour.
				t.Logf("A billed %v, busy %v of it", r.Deleted.Sub(r.Created).Round(time.Minute), hourEnd.Sub(r.Created).Round(time.Minute))
			}
		}
		require.NoError(t, e.m.Delete(t.Context(), "ax"))
		e.run(3 * time.Hour)
		e.assertNothingLeft()
	})
}
