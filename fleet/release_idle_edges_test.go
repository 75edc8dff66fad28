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

// Policy.RebuySpares/RebuyHold: a spare is kept RebuyHold past the end of
// its minimum or past going idle, the later, and never before IdleTimeout
// after going idle (less boundarySlack when that falls on a billed
// minute's boundary: the delete then lands in the minute already paid).
// A spare whose job ended inside its minimum went at the minimum's end
// plus RebuyHold, before IdleTimeout had run (tester AN: VM released at
// 34:50, bare metal at 8:29:50, before): a job arriving in between bought a
// new minimum.
func TestRebuySpareKeptIdleTimeoutAfterAJobInsideItsMinimum(t *testing.T) {
	for _, c := range []struct {
		name                  string
		typ                   string
		hold, idle, busyUntil time.Duration
	}{
		{"vm: IdleTimeout 20m, job ends at 20m", "vm-mi300x-1", 5 * time.Minute, 20 * time.Minute, 20 * time.Minute},
		{"bare metal: IdleTimeout 2h, job ends at 7h", "bm-mi300x-8", 30 * time.Minute, 2 * time.Hour, 7 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, _ := oneJobA{req: hotType(c.typ), pol: fleet.Policy{RebuySpares: 1, RebuyHold: c.hold},
				idle: c.idle, busyUntil: c.busyUntil, horizon: 20 * time.Hour}.play(t)
			assert.False(t, ch.Live, "still billing")
			kept := ch.To.Sub(ch.From)
			assert.GreaterOrEqual(t, kept, c.busyUntil+c.idle-10*time.Second,
				"the spare went %v after its job ended, IdleTimeout is %v (%s)", (kept - c.busyUntil).Round(time.Second), c.idle, ch.Description)
			assert.Equal(t, c.busyUntil+c.idle, ch.Billed, ch.Description)
		})
	}
}

// hotDeleteLatency delays every Hot Aisle delete (VM and bare metal) by d:
// a call that takes a moment, as a real one does.
func hotDeleteLatency(t *testing.T, d time.Duration) func(*sim.Vultr, *sim.HotAisle) {
	return func(_ *sim.Vultr, h *sim.HotAisle) {
		assert.NoError(t, h.Inject(sim.Fault{Route: hotDeleteRoute, Latency: d}))
		assert.NoError(t, h.Inject(sim.Fault{Route: "DELETE /api/teams/{team}/bare_metal/{server}/", Latency: d}))
	}
}

// A Hot Aisle node idle past its minimum and not held (RebuyHoldOff) goes
// IdleTimeout after it went idle; when that falls on a billed minute's
// boundary, it goes boundarySlack before it, so that the delete (2 s here)
// lands inside the minute already paid (tester AN: VM job ending at 35:00
// with IdleTimeout 5 min billed 41 min; bare metal ending at 9:00:00 with
// 30 min billed 571 min, before).
func TestIdleTimeoutReleaseOnAMinuteBoundary(t *testing.T) {
	for _, c := range []struct {
		name            string
		typ             string
		idle, busyUntil time.Duration
	}{
		{"vm", "vm-mi300x-1", 5 * time.Minute, 35 * time.Minute},
		{"bare metal", "bm-mi300x-8", 30 * time.Minute, 9 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, _ := oneJobA{req: hotType(c.typ), pol: fleet.Policy{RebuyHoldOff: true}, idle: c.idle,
				busyUntil: c.busyUntil, horizon: 20 * time.Hour, setup: hotDeleteLatency(t, 2*time.Second)}.play(t)
			assert.False(t, ch.Live, "still billing")
			assert.Equal(t, c.busyUntil+c.idle, ch.Billed, "released %v after the billing start (%s)",
				ch.To.Sub(ch.From).Round(time.Second), ch.Description)
		})
	}
}

// A Vultr node that goes idle seconds before its hour ends (here 3 s; a
// DELETE takes 5 s) cannot be deleted inside that hour: the next one is
// bought either way. It is kept, acquirable, to that hour's last safe
// moment, and the next job (at 1:10) takes it (tester AN: deleted at
// 1:00:02, a second VM bought, 3 h billed and the job waited 1m50s for its
// boot, before).
func TestVultrIdleSecondsBeforeTheHourKeptForTheNextHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLiveWorld(t, fleet.Policy{})
		defer w.finish()
		t0 := time.Now()
		at := func(d time.Duration) { time.Sleep(time.Until(t0.Add(d))) }
		require.NoError(t, w.v.Inject(sim.Fault{Route: vultrDeleteRoute, Latency: 5 * time.Second}))
		s := fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute, Requirements: vultrType("vcg-a100-12c-120g-80vram")}
		require.NoError(t, w.m.Apply(context.Background(), s))
		first, ok := w.acquire("f", time.Hour)
		require.True(t, ok)
		at(59*time.Minute + 57*time.Second)
		require.NoError(t, w.m.MarkIdle(first.ID))
		at(70 * time.Minute)
		second, err := w.m.Acquire(context.Background(), "f") // the orchestrator's second job
		require.NoError(t, err, "the node paid to 2:00 is idle")
		assert.Equal(t, first.ID, second.ID)
		at(80 * time.Minute)
		require.NoError(t, w.m.MarkIdle(second.ID))
		w.settle(6 * time.Hour)
		cs := w.ledger()
		require.Len(t, cs, 1, "one VM")
		assert.False(t, cs[0].Live)
		assert.Equal(t, 2*time.Hour, cs[0].Billed)
	})
}

// Policy.RebuySpares counts a fleet's spares whatever their offer: a fleet
// whose spec changed from 1-GPU Hot Aisle VMs (30-min minimum) to 2-GPU
// ones (60-min minimum), one idle node of each, RebuySpares 1: only the
// first in Acquire's order (the 2-GPU VM, paid to 60 min) is held (tester
// AN: both held, the 1-GPU VM billed 50 min instead of 30, before).
func TestRebuySparesCountedPerFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLiveWorld(t, fleet.Policy{RebuySpares: 1, RebuyHold: 20 * time.Minute})
		defer w.finish()
		t0 := time.Now()
		s := fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute, Requirements: hotType("vm-mi300x-1")}
		require.NoError(t, w.m.Apply(context.Background(), s))
		one, ok := w.acquire("f", time.Hour)
		require.True(t, ok)
		s.Nodes, s.Requirements = 2, hotType("vm-mi300x-2")
		require.NoError(t, w.m.Apply(context.Background(), s))
		two, ok := w.acquire("f", time.Hour)
		require.True(t, ok)
		time.Sleep(time.Until(t0.Add(10 * time.Minute)))
		require.NoError(t, w.m.MarkIdle(one.ID))
		require.NoError(t, w.m.MarkIdle(two.ID))
		w.settle(10 * time.Hour)
		cs := w.ledger()
		require.Len(t, cs, 2)
		billed := map[string]time.Duration{}
		for _, c := range cs {
			assert.False(t, c.Live, c.ResourceID)
			billed[c.Plan] = c.Billed
		}
		assert.Equal(t, map[string]time.Duration{"vm-mi300x-1": 30 * time.Minute, "vm-mi300x-2": 80 * time.Minute}, billed)
	})
}
