package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Vultr server halted and relabelled (label and tags wiped) at once:
// it is still known by id, released and replaced; nothing is left.
func TestHaltedAndRelabelledAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		w.apply("f", 1, vultrVM("ewr"))
		inst := w.idle("f")
		require.NoError(t, w.vultr.HaltOutOfBand(inst.ID))
		require.NoError(t, w.vultr.RelabelOutOfBand(inst.ID, "someone-else", nil))
		require.True(t, w.runUntil(time.Hour, func() bool {
			for _, i := range w.m.Instances("f") {
				if i.ID != inst.ID && i.Status == fleet.StatusIdle {
					return true
				}
			}
			return false
		}), "replaced: %v", w.events)
		assert.GreaterOrEqual(t, w.count(fleet.EventInstanceStopped), 1)
		w.teardown("f")
	})
}

// A scale-down release waiting for its window; the server is deleted in
// the console meanwhile (Vultr answers 400 invalid instance ID); the fleet
// grows again. The dead server must not be taken back as a member.
func TestConsoleDeletedWhileReleaseWaitsIsNotTakenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		w.apply("f", 2, vultrVM("ewr"))
		require.True(t, w.runUntil(time.Hour, func() bool { return countStatus(w.m.Instances("f"), fleet.StatusIdle) == 2 }))
		w.apply("f", 1, vultrVM("ewr"))
		require.True(t, w.runUntil(time.Minute, func() bool { return w.count(fleet.EventReleaseDeferred) == 1 }))
		var waiting fleet.Instance
		for _, i := range w.m.Instances("f") {
			if i.Status == fleet.StatusTerminating {
				waiting = i
			}
		}
		require.NotEmpty(t, waiting.ID)
		require.NoError(t, w.vultr.DestroyOutOfBand(waiting.ID, sim.VultrGoneInvalidID))
		w.run(2 * time.Minute)
		w.apply("f", 2, vultrVM("ewr"))
		w.run(5 * time.Minute)
		liveIDs := map[string]bool{}
		for _, r := range w.vultr.LiveResources("instance") {
			liveIDs[r.ID] = true
		}
		for _, i := range w.m.Instances("f") {
			if i.Status == fleet.StatusIdle || i.Status == fleet.StatusBusy {
				assert.True(t, liveIDs[i.ID], "member %s (%s) has a live server behind it", i.ID, i.Status)
			}
		}
		w.teardown("f")
	})
}

// A Hot Aisle 2x VM (60 min minimum) halted out of band at 10 min, with
// OnStopped replace: the stopped one is released at the end of its
// minimum (paid anyway) with no refused early delete, billed 60 min once.
func TestHaltedInsideMinimumReleasedAtItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{OnStopped: fleet.OnStoppedReplace})
		w.apply("f", 1, hotType("vm-mi300x-2"))
		inst := w.idle("f")
		time.Sleep(10*time.Minute - time.Since(inst.Created))
		require.NoError(t, w.hot.HaltOutOfBand(inst.ID))
		require.True(t, w.runUntil(2*time.Hour, func() bool {
			for _, r := range w.hot.Resources() {
				if r.ID == inst.ID {
					return !r.Live()
				}
			}
			return false
		}), "stopped one released: %v", w.events)
		for _, c := range w.hot.Calls() {
			if c.Route == hDelete {
				assert.Less(t, c.Status, 300, "refused delete at %v: %d", c.Time.Sub(inst.Created), c.Status)
			}
		}
		for _, ch := range w.hot.Ledger().Charges {
			if ch.ResourceID == inst.ID {
				assert.Equal(t, time.Hour, ch.Billed, "billed its minimum once: %s", ch.Description)
			}
		}
		w.teardown("f")
	})
}

// A Vultr bare-metal server that never leaves pending: warned up front,
// released at 55 minutes; Vultr refuses deletes while pending, so it must
// stay tracked (alert) and be deleted as soon as Vultr accepts.
func TestVultrBareMetalStuckPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		require.NoError(t, w.vultr.SlowProvisioning("vbm-*", 3*time.Hour))
		w.apply("f", 1, fleet.Requirements{Providers: []string{"vultr"}, GPUModel: "MI300X", GPUCount: 8})
		w.run(time.Minute)
		assert.Equal(t, 1, w.count(fleet.EventSlowProvisioning))
		require.True(t, w.runUntil(2*time.Hour, func() bool { return w.count(fleet.EventDeadlineMissed) == 1 }))
		ev := w.eventsOf(fleet.EventDeadlineMissed)[0]
		inst := w.m.Instances("f")[0]
		assert.InDelta(t, 55*time.Minute, ev.At.Sub(inst.Created), float64(time.Minute), "55-minute deadline")
		w.teardown("f")
		for _, ch := range w.vultr.Ledger().Charges {
			assert.LessOrEqual(t, ch.Billed, 4*time.Hour, "%s billed %v", ch.ResourceID, ch.Billed)
		}
	})
}

// A Vultr VM reinstalled in the console at 20 min: a new host key, and the
// server locked again (here for an hour). The agent checks fail, the
// instance is replaced; its delete is refused as locked until the lock
// ends, retried, and lands within minutes of it.
func TestVultrLockedAfterConsoleReinstall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		w.apply("f", 1, vultrVM("ewr"))
		inst := w.idle("f")
		time.Sleep(20*time.Minute - time.Since(inst.Created))
		tm := sim.DefaultVultrVMTiming()
		tm.Lock = 80 * time.Minute
		require.NoError(t, w.vultr.SetServerTiming(inst.ID, tm))
		w.net.Host(inst.SSH.Addr()).RotateHostKey()
		lockEnd := inst.Created.Add(tm.Pending + tm.Lock)
		require.True(t, w.runUntil(4*time.Hour, func() bool {
			for _, r := range w.vultr.Resources() {
				if r.ID == inst.ID {
					return !r.Live()
				}
			}
			return false
		}), "released: %v", w.events)
		for _, r := range w.vultr.Resources() {
			if r.ID == inst.ID {
				assert.Less(t, r.Deleted.Sub(lockEnd), 6*time.Minute, "deleted soon after the lock ends")
			}
		}
		w.teardown("f")
	})
}

// A ready instance deleted out of band: its next agent check fails, the
// provider's Get says it is gone (ErrNotFound), so no restart is tried. The
// event must not claim "the agent was started again", and the gone
// instance is not counted as a failed check.
func TestAgentCheckOnAGoneInstanceDoesNotClaimARestart(t *testing.T) {
	for _, cloud := range []string{"vultr", "hotaisle"} {
		t.Run(cloud, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newT9(t, fleet.Policy{DriftCheckInterval: time.Hour})
				r := vultrVM("ewr")
				if cloud == "hotaisle" {
					r = hotType("vm-mi300x-1")
				}
				w.apply("f", 1, r)
				inst := w.idle("f")
				w.run(20 * time.Minute) // past the boot-time listings
				if cloud == "vultr" {
					require.NoError(t, w.vultr.DestroyOutOfBand(inst.ID, sim.VultrGoneInvalidID))
				} else {
					require.NoError(t, w.hot.DestroyOutOfBand(inst.ID))
				}
				w.run(12 * time.Minute)
				for _, ev := range w.eventsOf(fleet.EventAgentUnhealthy) {
					assert.NotContains(t, ev.Message, "started again", "nothing was started: %s", ev)
				}
				w.teardown("f")
			})
		})
	}
}
