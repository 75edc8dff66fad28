package fleet_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
)

// A Vultr Cloud GPU released idle (job 0-20 min, IdleTimeout 1 min) while
// every DELETE answers 500 for 3h20m from the fakes' start. The release is
// put off hour after hour (EventReleaseDeferred at each hour's end) and
// not for ever: once deletes pass it lands at the paid fourth hour's last
// safe moment, 4 h billed (what any delete after 3:00 bills), no delete
// attempt between the deferrals' last safe moments, one alert.
func TestVultrDeferralEndsOnceDeletesPass(t *testing.T) {
	charge, evs := oneJobA{req: vultrType("vcg-a100-12c-120g-80vram"), idle: time.Minute, busyUntil: 20 * time.Minute,
		horizon: 8 * time.Hour, setup: refuseDeletes(t, vultrDeleteRoute, 500, "", 3*time.Hour+20*time.Minute)}.play(t)
	deferred := ofType(evs, fleet.EventReleaseDeferred)
	var at []time.Duration
	for _, ev := range deferred {
		at = append(at, ev.At.Sub(charge.From).Round(time.Second))
	}
	t.Logf("billed %v, released %v after the billing start; deferred to %v; retries %v", charge.Billed,
		charge.To.Sub(charge.From).Round(time.Second), at, retriesOf(evs).describe(charge.From))
	assert.False(t, charge.Live, "still billing")
	assert.Equal(t, 4*time.Hour, charge.Billed)
	assert.GreaterOrEqual(t, len(deferred), 3, "put off at each hour's end")
	assert.Equal(t, 1, len(ofType(evs, fleet.EventTerminationStuck)), "one alert")
	for _, ev := range retriesOf(evs) {
		off := ev.Time.Sub(charge.From) % time.Hour
		assert.GreaterOrEqual(t, off, 50*time.Minute-time.Second, "a delete tried inside a paid hour before its last safe moment at %v",
			ev.Time.Sub(charge.From).Round(time.Second))
	}
}
