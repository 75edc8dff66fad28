package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
)

// Tester K: one job per machine ending at various offsets into a billing
// unit, on other plans and policies than the repo's tests.
func TestTesterKReleaseOffsets(t *testing.T) {
	vm := vultrType("vcg-a100-12c-120g-80vram")
	cases := []struct {
		name   string
		job    oneJobA
		billed time.Duration
	}{
		{"ha vm2 60min ends 57m idle10", oneJobA{req: hotType("vm-mi300x-2"), idle: 10 * time.Minute, busyUntil: 57 * time.Minute}, 60 * time.Minute},
		{"ha vm2 60min ends 59m30 idle10", oneJobA{req: hotType("vm-mi300x-2"), idle: 10 * time.Minute, busyUntil: 59*time.Minute + 30*time.Second}, 60 * time.Minute},
		{"ha vm8 60min ends 20m idle3h", oneJobA{req: hotType("vm-mi300x-8"), idle: 3 * time.Hour, busyUntil: 20 * time.Minute}, 60 * time.Minute},
		{"ha vm1 ends 29m30 idle5", oneJobA{req: hotType("vm-mi300x-1"), idle: 5 * time.Minute, busyUntil: 29*time.Minute + 30*time.Second}, 30 * time.Minute},
		{"ha vm1 ends 40m idle5", oneJobA{req: hotType("vm-mi300x-1"), idle: 5 * time.Minute, busyUntil: 40 * time.Minute}, 46 * time.Minute},
		{"ha bm ends 479m30 idle10", oneJobA{req: hotType("bm-mi300x-8"), idle: 10 * time.Minute, busyUntil: 479*time.Minute + 30*time.Second}, 480 * time.Minute},
		{"ha bm ends 100m idle10", oneJobA{req: hotType("bm-mi300x-8"), idle: 10 * time.Minute, busyUntil: 100 * time.Minute}, 480 * time.Minute},
		{"vultr vm ends 49m59", oneJobA{req: vm, idle: time.Minute, busyUntil: 49*time.Minute + 59*time.Second}, time.Hour},
		{"vultr vm ends 55m", oneJobA{req: vm, idle: time.Minute, busyUntil: 55 * time.Minute}, time.Hour},
		{"vultr vm ends 59m", oneJobA{req: vm, idle: time.Minute, busyUntil: 59 * time.Minute}, time.Hour},
		{"vultr vm ends 1h00m30", oneJobA{req: vm, idle: time.Minute, busyUntil: time.Hour + 30*time.Second}, 2 * time.Hour},
		{"vultr vm idle 3h", oneJobA{req: vm, idle: 3 * time.Hour, busyUntil: 10 * time.Minute}, time.Hour},
		{"vultr vm margin 2m ends 57m", oneJobA{req: vm, pol: fleet.Policy{HourlyReleaseMargin: 2 * time.Minute}, idle: time.Minute, busyUntil: 57 * time.Minute}, time.Hour},
		{"vultr vm interval 2h", oneJobA{req: vm, interval: 2 * time.Hour, idle: time.Minute, busyUntil: 10 * time.Minute}, time.Hour},
		{"ha vm1 interval 2h", oneJobA{req: hotType("vm-mi300x-1"), interval: 2 * time.Hour, idle: time.Minute, busyUntil: 10 * time.Minute}, 30 * time.Minute},
		{"ha vm1 interval 2h ends 40m", oneJobA{req: hotType("vm-mi300x-1"), interval: 2 * time.Hour, idle: 2 * time.Minute, busyUntil: 40 * time.Minute}, 43 * time.Minute},
		{"vultr bm ends 45m", oneJobA{req: vultrType(mi300x), idle: time.Minute, busyUntil: 45 * time.Minute}, time.Hour},
		{"vultr bm ends 2h05m", oneJobA{req: vultrType(mi300x), idle: 20 * time.Minute, busyUntil: 2*time.Hour + 5*time.Minute}, 3 * time.Hour},
		{"vultr vm compat ends 20m", oneJobA{req: vm, pol: fleet.Policy{Release: fleet.ReleaseCompat}, idle: time.Minute, busyUntil: 20 * time.Minute}, time.Hour},
		{"ha vm1 compat ends 20m", oneJobA{req: hotType("vm-mi300x-1"), pol: fleet.Policy{Release: fleet.ReleaseCompat}, idle: time.Minute, busyUntil: 20 * time.Minute}, 30 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.job.horizon = 12 * time.Hour
			ch, _ := c.job.play(t)
			assert.False(t, ch.Live, "still billing")
			assert.LessOrEqual(t, ch.Billed, c.billed, "%s: billed %v, released %v after billing start (%s)", c.name, ch.Billed, ch.To.Sub(ch.From), ch.Description)
			fmt.Printf("%-35s billed %v released at %v\n", c.name, ch.Billed, ch.To.Sub(ch.From).Round(time.Second))
		})
	}
}
