package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A Vultr node's idle release refused to the end of its first hour (every
// DELETE answers 500 for 65 min) is put off to the second hour's last safe
// moment. By then the provider has answered every call for 45 minutes: the
// calm margin (3 min) applies, not the wide one its own refusal an hour
// before asked for, so the node stays idle, able to take a job, until 1h57.
// (tester BI: before the fix the release kept the 10-minute margin for the
// whole next hour: the node went at 1h50, and a job arriving at 1h52 bought
// a new VM, $2.40 and a 1m50s wait; on bare metal $17.52 and 41 minutes.)
func TestDeferredReleaseTakesTheCalmMarginOnceSettled(t *testing.T) {
	for _, k := range []struct {
		name string
		typ  string
		busy time.Duration // from the billing start: past the boot
		del  string
	}{{"VM", "vcg-a100-12c-120g-80vram", 5 * time.Minute, vultrDeleteRoute}, {"bare metal", mi300x, 45 * time.Minute, routeVultrMetalDelete}} {
		t.Run(k.name, func(t *testing.T) {
			charge, evs := oneJobA{req: vultrType(k.typ), idle: time.Minute, busyUntil: k.busy,
				horizon: 4 * time.Hour, setup: refuseDeletes(t, k.del, 500, "", 65*time.Minute)}.play(t)
			released := charge.To.Sub(charge.From).Round(time.Second)
			t.Logf("billed %v, released %v after the billing start; retries %v", charge.Billed, released, retriesOf(evs).describe(charge.From))
			assert.False(t, charge.Live, "still billing")
			assert.Equal(t, 2*time.Hour, charge.Billed)
			assert.GreaterOrEqual(t, released, 2*time.Hour-4*time.Minute, "released with the wide margin an hour after its own refusal")
		})
	}
}
