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

// Vultr MI300X bare metal active late in its first hour (54:30 and 54:40
// after the create; deletes refused as "locked" for 5 minutes after, until
// 59:30 and 59:40) runs a short job ending at 56:30 / 57:00. The delete
// lock is counted from the last listing that showed the server not running
// (InstanceRecord.PendingSeen), not from the first that showed it running
// (up to a minute later), so a delete is tried once the provider takes it
// and lands before the hour ends: billed one hour (fleet/doc.go, Releases;
// Policy.HourlyReleaseMargin). Tester U found the only DELETE sent 30 s
// into the second hour. (A lock lifted 10 s before the hour is not always
// beaten: the last attempt is planned 10 s before it, less the rounding of
// the creation time to the second.)
func TestVultrDeleteLockCountedFromTheLastPendingListing(t *testing.T) {
	for _, c := range []struct {
		pending, busy time.Duration
	}{
		{54*time.Minute + 30*time.Second, 56*time.Minute + 30*time.Second},
		{54*time.Minute + 40*time.Second, 57 * time.Minute},
	} {
		tm := sim.DefaultVultrBareMetalTiming()
		tm.Pending = c.pending
		var v *sim.Vultr
		ch, _ := oneJobA{req: vultrType(mi300x), idle: 5 * time.Minute, busyUntil: c.busy, horizon: 5 * time.Hour,
			simOpts: []sim.Option{sim.WithVultrTiming("vbm-*", tm)},
			setup:   func(vs *sim.Vultr, _ *sim.HotAisle) { v = vs }}.play(t)
		var deletes []time.Duration
		for _, call := range v.Calls() {
			if call.Method == "DELETE" {
				deletes = append(deletes, call.Time.Sub(ch.From).Round(100*time.Millisecond))
			}
		}
		assert.Equal(t, time.Hour, ch.Billed, "active %v after the create, lock lifted at %v, job ended %v; DELETE calls at %v; released %v after the billing start",
			c.pending, c.pending+tm.Lock, c.busy, deletes, ch.To.Sub(ch.From).Round(100*time.Millisecond))
	}
}

// A Manager that restarts (with its Store, or without and adopting by
// label) 56 minutes into a Vultr VM's hour, the VM having run since minute
// 1.5 (its delete lock ended at 6.5), does not count the lock from the
// restart (tester X): no listing of its own showed the server pending, so
// its running is counted from its create (InstanceRecord.PendingSeen), and
// the idle node goes at once: one hour billed (it was kept to 1:50, two
// hours, whenever a restart fell in an hour's last 5 minutes).
func TestVultrRestartLateInTheHourAssumesNoDeleteLock(t *testing.T) {
	for _, lost := range []bool{false, true} {
		name := "store kept, crashed while provisioning"
		if lost {
			name = "store lost, adopted"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				s := spec("f", 1, vultrVM("ewr"))
				s.IdleTimeout = time.Minute
				require.NoError(t, e.m.Apply(t.Context(), s))
				require.True(t, e.runUntil(time.Hour, func() bool {
					in := e.m.Instances("f")
					return len(in) == 1 && in[0].Status == fleet.StatusProvisioning
				}))
				created, id := e.only("f").Created, e.only("f").ID
				e.m.Close() // the process dies
				time.Sleep(time.Until(created.Add(56 * time.Minute)))
				store := e.store
				if lost {
					store = fleet.NewMemoryStore()
				}
				e.m = e.manager(store)
				require.NoError(t, e.m.Apply(t.Context(), s))
				stop := e.running()
				time.Sleep(time.Until(created.Add(3 * time.Hour)))
				stop()
				var billed time.Duration
				for _, c := range e.vultr.Ledger().Charges {
					if c.ResourceID == id {
						billed += c.Billed
					}
				}
				var at []time.Duration
				for _, ev := range e.eventsOf(fleet.EventReleaseRequested) {
					at = append(at, ev.At.Sub(created))
				}
				assert.Equal(t, time.Hour, billed, "release requested at %v", at)
			})
		})
	}
}
