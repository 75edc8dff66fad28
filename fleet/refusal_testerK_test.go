package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
)

// Tester K: deletes refused near the boundary on the other routes and
// plans (bare metal on both clouds, Hot Aisle 2x VM with its 60-minute
// minimum), and a 429 with Retry-After.
func TestTesterKRefusalsNearTheBoundary(t *testing.T) {
	for _, c := range []struct {
		name  string
		job   oneJobA
		route string
		until time.Duration
		st    int
		want  time.Duration
	}{
		{"ha bm 500 until 479m40", oneJobA{req: hotType("bm-mi300x-8"), busyUntil: 100 * time.Minute}, "DELETE /api/teams/{team}/bare_metal/{server}/", 479*time.Minute + 40*time.Second, 500, 480 * time.Minute},
		{"ha bm 503 until 479m40", oneJobA{req: hotType("bm-mi300x-8"), busyUntil: 100 * time.Minute}, "DELETE /api/teams/{team}/bare_metal/{server}/", 479*time.Minute + 40*time.Second, 503, 480 * time.Minute},
		{"ha vm2 500 until 59m45", oneJobA{req: hotType("vm-mi300x-2"), busyUntil: 10 * time.Minute}, hotDeleteRoute, 59*time.Minute + 45*time.Second, 500, 60 * time.Minute},
		{"vultr bm 500 until 1h59m30", oneJobA{req: vultrType(mi300x), busyUntil: 75 * time.Minute}, "DELETE /v2/bare-metals/{id}", time.Hour + 59*time.Minute + 30*time.Second, 500, 2 * time.Hour},
		{"vultr vm 429 until 59m30", oneJobA{req: vultrType("vcg-a100-12c-120g-80vram"), busyUntil: 20 * time.Minute}, vultrDeleteRoute, 59*time.Minute + 30*time.Second, 429, time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			for play := range 3 {
				j := c.job
				j.pol.RebuyHoldOff = true
				j.idle, j.horizon = time.Minute, 12*time.Hour
				j.setup = func(v *sim.Vultr, h *sim.HotAisle) {
					f := sim.Fault{Route: c.route, Status: c.st, Duration: c.until}
					if c.route[:9] == "DELETE /v" {
						assert.NoError(t, v.Inject(f))
					} else {
						assert.NoError(t, h.Inject(f))
					}
				}
				ch, evs := j.play(t)
				desc := fmt.Sprintf("play %d: released %v; retries %v", play, ch.To.Sub(ch.From).Round(time.Second), retriesOf(evs).describe(ch.From))
				assert.False(t, ch.Live, desc)
				assert.Equal(t, c.want, ch.Billed, "%s (%s)", desc, ch.Description)
				_ = fleet.EventTerminationRetry
			}
		})
	}
}
