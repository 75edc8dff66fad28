package fleet_test

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
)

// marginCase is one job on a one-node fleet of req under pol (oneJobCharge):
// given back at end after the billing start, IdleTimeout idle; the node
// must be gone and billed want.
type marginCase struct {
	name      string
	pol       fleet.Policy
	req       fleet.Requirements
	idle, end time.Duration
	want      time.Duration // billed
}

func runMarginCases(t *testing.T, cases []marginCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ready := oneJobCharge(t, c.pol, c.req, c.idle, c.end)
			t.Logf("job ends +%v (ready +%v, IdleTimeout %v): billed %v, to +%v (%s)", c.end, ready.Round(time.Second), c.idle, got.Billed, got.To.Sub(got.From), got.Description)
			assert.False(t, got.Live, "still live")
			assert.Equal(t, c.want, got.Billed, "job ended +%v", c.end)
		})
	}
}

// Release at the last safe moment with non-default margins. One job on a
// one-node fleet, given back at an odd instant after the billing start;
// IdleTimeout 1 s, 59 min and 2 h. Vultr VM (hourly): with
// CalmHourlyReleaseMargin 1 min (HourlyReleaseMargin 20 min) the node
// goes at 59:00 of the hour it is in, whatever IdleTimeout says; a job
// ending between 59:00 and the hour's end still leaves time for a delete.
// Hot Aisle VM (30-min minimum, RebuyHoldOff): MinuteReleaseMargin 10 min,
// the node whose job ended inside the minimum goes at 20:00 or at once when
// later, billed the minimum; after the minimum, IdleTimeout after the job.
// Holds on main; kept as a guard of the margins' arithmetic.
func TestReleaseAtOddInstantsWithMargins(t *testing.T) {
	vpol := fleet.Policy{HourlyReleaseMargin: 20 * time.Minute, CalmHourlyReleaseMargin: time.Minute}
	hpol := fleet.Policy{MinuteReleaseMargin: 10 * time.Minute, RebuyHoldOff: true}
	hvm := hotType("vm-mi300x-1")
	runMarginCases(t, []marginCase{
		{"vultr/1s/58m30s", vpol, vultrType(vm), time.Second, 58*time.Minute + 30*time.Second, time.Hour},
		{"vultr/1s/59m20s", vpol, vultrType(vm), time.Second, 59*time.Minute + 20*time.Second, time.Hour},
		{"vultr/59m/7m", vpol, vultrType(vm), 59 * time.Minute, 7*time.Minute + 13*time.Second, time.Hour},
		{"vultr/2h/61m", vpol, vultrType(vm), 2 * time.Hour, 61*time.Minute + 7*time.Second, 2 * time.Hour},
		{"vultr/1s/119m5s", vpol, vultrType(vm), time.Second, 119*time.Minute + 5*time.Second, 2 * time.Hour},
		{"hot/1s/15m", hpol, hvm, time.Second, 15*time.Minute + 7*time.Second, 30 * time.Minute},
		{"hot/1s/25m", hpol, hvm, time.Second, 25*time.Minute + 33*time.Second, 30 * time.Minute},
		{"hot/59m/29m50s", hpol, hvm, 59 * time.Minute, 29*time.Minute + 50*time.Second, 30 * time.Minute},
		{"hot/1s/31m", hpol, hvm, time.Second, 31*time.Minute + 7*time.Second, 32 * time.Minute},
		{"hot/2h/20m", hpol, hvm, 2 * time.Hour, 20 * time.Minute, 30 * time.Minute},
	})
}

// Bare metal with wide or narrow margins. Vultr bare metal (active ~40
// min after its create, deletes refused 5 min after that): with both
// hourly margins 29 min, the hour's last safe moment (31:00) has passed
// when it is ready; a delete can still land in the hour once the lock
// ends, so a job ending at 44:00 costs 1 hour. With the calm margin 1 min,
// a job to 58:40 still costs 1 hour. Hot Aisle bare metal (8 h minimum,
// RebuyHoldOff) with MinuteReleaseMargin 14 min: a job ending inside the
// margin goes at once (8 h); one ending 30 s after the minimum with
// IdleTimeout 1 s costs 8 h 1 min. Holds on main; kept as a guard.
func TestBareMetalReleaseMargins(t *testing.T) {
	wide := fleet.Policy{HourlyReleaseMargin: 29 * time.Minute, CalmHourlyReleaseMargin: 29 * time.Minute}
	narrow := fleet.Policy{HourlyReleaseMargin: 10 * time.Minute, CalmHourlyReleaseMargin: time.Minute}
	hot := fleet.Policy{MinuteReleaseMargin: 14 * time.Minute, RebuyHoldOff: true}
	vbm := vultrType("vbm-256c-2048gb-8-mi300x-gpu")
	runMarginCases(t, []marginCase{
		{"vultr/wide/44m", wide, vbm, time.Second, 44 * time.Minute, time.Hour},
		{"vultr/wide/50m", wide, vbm, 2 * time.Hour, 50 * time.Minute, time.Hour},
		{"vultr/wide/95m", wide, vbm, time.Second, 95 * time.Minute, 2 * time.Hour},
		{"vultr/narrow/58m40s", narrow, vbm, time.Second, 58*time.Minute + 40*time.Second, time.Hour},
		{"hot/7h50m", hot, hotType("bm-mi300x-8"), 59 * time.Minute, 470 * time.Minute, 8 * time.Hour},
		{"hot/8h0m30s", hot, hotType("bm-mi300x-8"), time.Second, 480*time.Minute + 30*time.Second, 481 * time.Minute},
	})
}
