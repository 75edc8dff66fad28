package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A release decided while the provider is calm (at 1:20, in the VM's
// second hour, the Manager long started: Manager.Release, an Apply that
// shrinks the fleet, or Manager.Delete) is deferred to the hour's end less
// the calm margin (1:57); when the provider turns unsettled (an outage from
// 1:35 to 1:45) the deferred release comes forward to the wide margin
// (1:50) and lands between the outages, although a second outage from 1:56
// to 2:02 refuses every delete from 1:57 on. Billed 2 h, not 3 (tester AJ).
func TestDeferredReleaseComesForwardWhenTheProviderTurnsUnsettled(t *testing.T) {
	for _, c := range []struct {
		name    string
		nodes   int
		release func(t *testing.T, w *vultrWorld)
	}{
		{"Release", 1, func(t *testing.T, w *vultrWorld) {
			due, err := w.m.Release(t.Context(), w.id)
			require.NoError(t, err)
			assert.WithinDuration(t, w.from.Add(117*time.Minute), due, time.Minute, "deferred to the calm margin")
		}},
		{"Apply shrink", 2, func(t *testing.T, w *vultrWorld) {
			require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: 1, MinNodes: 1, IdleTimeout: time.Minute, Requirements: vultrType(vultrWorldPlan)}))
		}},
		{"Delete", 1, func(t *testing.T, w *vultrWorld) { require.NoError(t, w.m.Delete(t.Context(), "f")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newVultrWorld(t, fleet.Policy{}, fleet.Spec{Name: "f", Nodes: c.nodes, MinNodes: c.nodes, IdleTimeout: time.Minute, Requirements: vultrType(vultrWorldPlan)})
				w.at(80 * time.Minute)
				c.release(t, w)
				id := w.terminating("f")
				w.at(95 * time.Minute)
				require.NoError(t, w.v.Outage(10*time.Minute))
				w.at(116 * time.Minute)
				require.NoError(t, w.v.Outage(6*time.Minute))
				c := w.charge(id, 5*time.Hour)
				assert.False(t, c.Live, "still billing")
				assert.Equal(t, 2*time.Hour, c.Billed, "released %v after the create; $%.2f (%s)", c.To.Sub(c.From), c.USD, c.Description)
			})
		})
	}
}

// A Manager restarted at minute 46, a minute after a 10-minute outage it
// cannot know of, keeps the wide margin for its first 30 minutes: the idle
// VM goes at 50:00, not at 57:00 into a second outage (56:00 to 62:00)
// that would buy the second hour. Billed 1 h (tester AJ: 2 h).
func TestRestartedManagerKeepsTheWideMarginAWhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newVultrWorld(t, fleet.Policy{}, fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute, Requirements: vultrType(vultrWorldPlan)})
		w.at(35 * time.Minute)
		require.NoError(t, w.v.Outage(10*time.Minute))
		w.at(46 * time.Minute)
		w.restart()
		w.at(56 * time.Minute)
		require.NoError(t, w.v.Outage(6*time.Minute))
		c := w.charge(w.id, 5*time.Hour)
		assert.False(t, c.Live, "still billing")
		assert.Equal(t, time.Hour, c.Billed, "released %v after the create; $%.2f (%s)", c.To.Sub(c.From), c.USD, c.Description)
	})
}

// The calm margin is judged on a fresh answer: an idle VM whose routine
// listings are 30 minutes apart (Policy.DriftCheckInterval) would meet no
// call in an outage from 45:00 to 55:00; the listing planned inside the
// margin window (53:30, halfway between the hour's end less the wide and
// the calm margins) meets it, so the VM is released at once (the delete
// lands when the outage ends), not from 57:00 into a second outage (56:00
// to 62:00). Billed 1 h (tester AJ: 2 h, the calm margin judged on
// listings up to 10 minutes old).
func TestCalmMarginIsJudgedOnAListingInTheMarginWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newVultrWorld(t, fleet.Policy{DriftCheckInterval: 30 * time.Minute}, fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute, Requirements: vultrType(vultrWorldPlan)})
		w.at(45 * time.Minute)
		require.NoError(t, w.v.Outage(10*time.Minute))
		w.at(56 * time.Minute)
		require.NoError(t, w.v.Outage(6*time.Minute))
		c := w.charge(w.id, 5*time.Hour)
		var seen int
		for _, call := range w.v.Calls() {
			if call.Fault && call.Time.Before(w.from.Add(56*time.Minute)) {
				seen++
			}
		}
		assert.False(t, c.Live, "still billing")
		assert.Equal(t, time.Hour, c.Billed, "released %v after the create; %d calls met the first outage; $%.2f (%s)",
			c.To.Sub(c.From), seen, c.USD, c.Description)
	})
}
