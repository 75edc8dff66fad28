package fleet_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
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
