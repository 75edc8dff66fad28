package fleet_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHourlyMarginUnderTenSecondsRefused: an hourly release margin under
// 10 seconds is refused (ErrInvalidConfig). The release would be planned
// in an hour's last 10 seconds, which count for the next hour, so the node
// would never go. (tester BD: before the fix, with HourlyReleaseMargin or
// CalmHourlyReleaseMargin 1 s or 9 s, a Vultr node idle since 10:00 was
// still billing after 20 h: 21 h billed, bare metal $367.92 for a 4-min
// job.)
func TestHourlyMarginUnderTenSecondsRefused(t *testing.T) {
	for _, pol := range []fleet.Policy{{HourlyReleaseMargin: time.Second}, {HourlyReleaseMargin: 9 * time.Second},
		{CalmHourlyReleaseMargin: time.Second}, {CalmHourlyReleaseMargin: 9999 * time.Millisecond}} {
		_, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{vultr.NewProvider(vultr.New("k"))}, Policy: pol})
		require.ErrorIs(t, err, fleet.ErrInvalidConfig, "%+v", pol)
		assert.Contains(t, err.Error(), "under 10s", "%+v", pol)
	}
}

// TestMarginsAtTheirBoundsReleaseInTheirUnit: the smallest and largest
// margins NewManager accepts are kept: a node idle since 10:00 (Vultr bare
// metal: its job to 45:00; Hot Aisle bare metal: to 20:00) is gone inside
// the billing unit it was in.
func TestMarginsAtTheirBoundsReleaseInTheirUnit(t *testing.T) {
	for _, c := range []struct {
		name string
		pol  fleet.Policy
		req  fleet.Requirements
		end  time.Duration
		want time.Duration
	}{
		{"vultr vm/hourly 10s", fleet.Policy{HourlyReleaseMargin: 10 * time.Second}, vultrType(vm), 10 * time.Minute, time.Hour},
		{"vultr vm/hourly 11s", fleet.Policy{HourlyReleaseMargin: 11 * time.Second}, vultrType(vm), 10 * time.Minute, time.Hour},
		{"vultr vm/calm 10s", fleet.Policy{CalmHourlyReleaseMargin: 10 * time.Second}, vultrType(vm), 10 * time.Minute, time.Hour},
		{"vultr bm/hourly 10s", fleet.Policy{HourlyReleaseMargin: 10 * time.Second, CalmHourlyReleaseMargin: 10 * time.Second},
			vultrType("vbm-256c-2048gb-8-mi300x-gpu"), 45 * time.Minute, time.Hour},
		{"vultr vm/both 29m59s", fleet.Policy{HourlyReleaseMargin: 29*time.Minute + 59*time.Second, CalmHourlyReleaseMargin: 29*time.Minute + 59*time.Second},
			vultrType(vm), 20 * time.Minute, time.Hour},
		{"hot vm/minute 14m59s", fleet.Policy{MinuteReleaseMargin: 14*time.Minute + 59*time.Second, RebuyHoldOff: true}, hotType("vm-mi300x-1"), 10 * time.Minute, 30 * time.Minute},
		{"hot vm/minute 1s", fleet.Policy{MinuteReleaseMargin: time.Second, RebuyHoldOff: true}, hotType("vm-mi300x-1"), 10 * time.Minute, 30 * time.Minute},
		{"hot bm/minute 1s", fleet.Policy{MinuteReleaseMargin: time.Second, RebuyHoldOff: true}, hotType("bm-mi300x-8"), 20 * time.Minute, 8 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := oneJobCharge(t, c.pol, c.req, 5*time.Minute, c.end)
			assert.False(t, got.Live)
			assert.Equal(t, c.want, got.Billed)
		})
	}
}
