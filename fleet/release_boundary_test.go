package fleet_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
)

// A release refused near a billing boundary (the end of a billed hour on
// Vultr, the end of the minimum reservation on Hot Aisle) must be retried
// before the boundary once the provider accepts it: the retry backoff
// (randomised, up to five minutes) must not carry the next attempt past the
// moment a new billing unit starts. Each case is played several times: the
// backoff's jitter is not seeded and goroutine order varies.

// boundaryCase is one machine released idle near a billing boundary while
// its deletes are refused.
type boundaryCase struct {
	name     string
	job      oneJobA
	plays    int
	billed   time.Duration // what every play must be billed
	boundary time.Duration // from the billing start: the boundary the release must beat
	margin   time.Duration // the release margin before it (the tight retry window)
}

// vultrLockedUntil is a Vultr Cloud GPU whose deletes are refused as locked
// until lift after billing started (active 90 s after the create).
func vultrLockedUntil(lift time.Duration) []sim.Option {
	tm := sim.DefaultVultrVMTiming()
	tm.Lock = lift - tm.Pending
	return []sim.Option{sim.WithVultrTiming("vcg-*", tm)}
}

// refuseDeletes makes the fake answer every delete of route with status
// (and message) for d from the fake's creation (just before the billing
// start). It runs inside the play's bubble: assert, not require.
func refuseDeletes(t *testing.T, route string, status int, msg string, d time.Duration) func(v *sim.Vultr, h *sim.HotAisle) {
	return func(v *sim.Vultr, h *sim.HotAisle) {
		f := sim.Fault{Route: route, Status: status, Message: msg, Duration: d}
		if strings.HasPrefix(route, "DELETE /v2/") {
			assert.NoError(t, v.Inject(f))
			return
		}
		assert.NoError(t, h.Inject(f))
	}
}

const (
	vultrDeleteRoute = "DELETE /v2/instances/{id}"
	hotDeleteRoute   = "DELETE /api/teams/{team}/virtual_machines/{vm}/"
)

// check plays c and lists what went wrong in each play.
func (c boundaryCase) check(t *testing.T) {
	t.Helper()
	for play := range c.plays {
		charge, evs := c.job.play(t)
		retries := retriesOf(evs)
		desc := fmt.Sprintf("play %d: released %v after the billing start; retries (planned at, from) %v",
			play, charge.To.Sub(charge.From).Round(time.Second), retries.describe(charge.From))
		assert.False(t, charge.Live, "still billing; %s", desc)
		assert.Equal(t, c.billed, charge.Billed, "%s (%s)", desc, charge.Description)
		b := charge.From.Add(c.boundary)
		for _, ev := range retries {
			if !ev.Time.Before(b.Add(-c.margin)) && ev.Time.Before(b.Add(-10*time.Second)) {
				assert.LessOrEqual(t, ev.At.Sub(ev.Time), 30*time.Second, "inside the last margin: %s", desc)
				assert.True(t, ev.At.Before(b), "a retry planned past the boundary it could beat: %s", desc)
			}
		}
		assert.LessOrEqual(t, retries.mostInAMinute(), 4, "refused releases retried too often: %s", desc)
		assert.Empty(t, ofType(evs, fleet.EventManualCleanup), "given up: %s", desc)
	}
}

type retryEvents []fleet.Event

func retriesOf(evs []fleet.Event) retryEvents { return ofType(evs, fleet.EventTerminationRetry) }

func ofType(evs []fleet.Event, typ fleet.EventType) []fleet.Event {
	var out []fleet.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// mostInAMinute is the largest number of refused attempts within 60 s.
func (rs retryEvents) mostInAMinute() int {
	most := 0
	for i := range rs {
		n := 0
		for _, ev := range rs[i:] {
			if ev.Time.Sub(rs[i].Time) < time.Minute {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

func (rs retryEvents) describe(from time.Time) []string {
	out := make([]string, 0, len(rs))
	for _, ev := range rs {
		out = append(out, fmt.Sprintf("%v<-%v", ev.At.Sub(from).Round(time.Second), ev.Time.Sub(from).Round(time.Second)))
	}
	return out
}

// Vultr refuses the delete ("Server is currently locked") until 58:30 or
// 59:40 into the hour; the idle release is asked at 50:00 (the hour's end
// less HourlyReleaseMargin). Billed one hour, not two — also with a loop
// that wakes rarely (Interval 20 minutes) and with the ReleaseNow policy,
// whose release starts at 21:00 and backs off to five minutes long before
// the hour's last margin.
func TestVultrDeleteLockedNearTheHourEnd(t *testing.T) {
	gpu := vultrType("vcg-a100-12c-120g-80vram")
	for _, c := range []boundaryCase{
		{name: "lock to 58:30", plays: 10, job: oneJobA{simOpts: vultrLockedUntil(58*time.Minute + 30*time.Second)}},
		{name: "lock to 59:40", plays: 6, job: oneJobA{simOpts: vultrLockedUntil(59*time.Minute + 40*time.Second)}},
		{name: "lock to 59:40, Interval 20m", plays: 4,
			job: oneJobA{interval: 20 * time.Minute, simOpts: vultrLockedUntil(59*time.Minute + 40*time.Second)}},
		{name: "ReleaseNow, lock to 59:30", plays: 4,
			job: oneJobA{pol: fleet.Policy{Release: fleet.ReleaseNow}, simOpts: vultrLockedUntil(59*time.Minute + 30*time.Second)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.job.req, c.job.idle, c.job.busyUntil, c.job.horizon = gpu, time.Minute, 20*time.Minute, 4*time.Hour
			c.billed, c.boundary, c.margin = time.Hour, time.Hour, 10*time.Minute
			c.check(t)
		})
	}
}

// Vultr bare metal (active 40 minutes after the create, billed per started
// hour): locked until 1:59:30 after billing started, released idle at 1:50.
func TestVultrBareMetalDeleteLockedNearTheHourEnd(t *testing.T) {
	tm := sim.DefaultVultrBareMetalTiming()
	tm.Lock = time.Hour + 59*time.Minute + 30*time.Second - tm.Pending
	c := boundaryCase{plays: 4, billed: 2 * time.Hour, boundary: 2 * time.Hour, margin: 10 * time.Minute,
		job: oneJobA{req: vultrType(mi300x), idle: time.Minute, busyUntil: 75 * time.Minute, horizon: 5 * time.Hour,
			simOpts: []sim.Option{sim.WithVultrTiming("vbm-*", tm)}}}
	c.check(t)
}

// A streak of server errors on Vultr's delete near the hour's end: 500
// (not retried by the client) and 503 (retried by the client first) until
// 59:00 or 59:35 after the fakes started (the billing start is moments
// later). Billed one hour.
func TestVultrDelete5xxStreakNearTheHourEnd(t *testing.T) {
	for _, c := range []struct {
		status int
		until  time.Duration
	}{{500, 59 * time.Minute}, {500, 59*time.Minute + 35*time.Second}, {503, 59*time.Minute + 35*time.Second}} {
		t.Run(fmt.Sprint(c.status, " until ", c.until), func(t *testing.T) {
			boundaryCase{plays: 4, billed: time.Hour, boundary: time.Hour, margin: 10 * time.Minute,
				job: oneJobA{req: vultrType("vcg-a100-12c-120g-80vram"), idle: time.Minute, busyUntil: 20 * time.Minute,
					horizon: 4 * time.Hour, setup: refuseDeletes(t, vultrDeleteRoute, c.status, "", c.until)}}.check(t)
		})
	}
}

// Hot Aisle (billed per minute, 30-minute minimum): the idle release is
// asked at 29:00 (the minimum's end less MinuteReleaseMargin) and refused
// until 29:45 — by the minimum-usage refusal (400), a 500 or a 503 retried
// by the client. Billed the 30-minute minimum, not 31 minutes.
func TestHotAisleDeleteRefusedNearTheMinimumEnd(t *testing.T) {
	for _, c := range []struct {
		status int
		msg    string
	}{{400, "server cannot be released due to minimum usage requirement"}, {500, ""}, {503, ""}} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			boundaryCase{plays: 6, billed: 30 * time.Minute, boundary: 30 * time.Minute, margin: time.Minute,
				job: oneJobA{req: hotType("vm-mi300x-1"), pol: fleet.Policy{RebuyHoldOff: true}, idle: time.Minute,
					busyUntil: 20 * time.Minute, horizon: 3 * time.Hour,
					setup: refuseDeletes(t, hotDeleteRoute, c.status, c.msg, 29*time.Minute+45*time.Second)}}.check(t)
		})
	}
}

// A delete refused across the boundary (Vultr locked until 1:20:00; Hot
// Aisle answering 500 until 50:00) is not given up. On Hot Aisle it goes on
// after the boundary every 30 seconds (past the minimum every minute is
// billed: tester AJ) and releases the machine once the provider accepts. On
// Vultr the boundary bought the next hour: the idle release is put off to
// that hour's last safe moment (EventReleaseDeferred; no attempt before it,
// the node can be taken back meanwhile) and lands before the second hour
// ends: billed 2 h (tester AN: retried with the backoff and deleted minutes
// into the paid hour, before). Both raise the TerminationStuck alert.
func TestDeleteRefusedAcrossTheBoundaryGoesOn(t *testing.T) {
	for _, c := range []struct {
		name              string
		job               oneJobA
		boundary, lift    time.Duration
		billedMin, billed time.Duration
		perMinute         bool // billed by the minute past the boundary
	}{
		{name: "vultr", boundary: time.Hour, lift: 80 * time.Minute, billedMin: 2 * time.Hour, billed: 2 * time.Hour,
			job: oneJobA{req: vultrType("vcg-a100-12c-120g-80vram"), simOpts: vultrLockedUntil(80 * time.Minute)}},
		{name: "hotaisle", boundary: 30 * time.Minute, lift: 50 * time.Minute, billedMin: 50 * time.Minute, billed: 51 * time.Minute, perMinute: true,
			job: oneJobA{req: hotType("vm-mi300x-1"), pol: fleet.Policy{RebuyHoldOff: true},
				setup: refuseDeletes(t, hotDeleteRoute, 500, "", 50*time.Minute)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for play := range 4 {
				c.job.idle, c.job.busyUntil, c.job.horizon = time.Minute, 20*time.Minute, 5*time.Hour
				charge, evs := c.job.play(t)
				retries := retriesOf(evs)
				desc := fmt.Sprintf("play %d: retries %v", play, retries.describe(charge.From))
				assert.False(t, charge.Live, "still billing: %s", desc)
				assert.GreaterOrEqual(t, charge.Billed, c.billedMin, desc)
				assert.LessOrEqual(t, charge.Billed, c.billed, "%s (%s)", desc, charge.Description)
				after := slices.DeleteFunc(slices.Clone(retries), func(ev fleet.Event) bool {
					return ev.Time.Before(charge.From.Add(c.boundary))
				})
				if c.perMinute {
					assert.NotEmpty(t, after, "no refusal after the boundary: %s", desc)
					for _, ev := range after {
						assert.LessOrEqual(t, ev.At.Sub(ev.Time), 30*time.Second, "every minute billed: retried at the boundary pace: %s", desc)
					}
					assert.Less(t, charge.To.Sub(charge.From), c.lift+6*time.Minute, "released within a backoff of the lift: %s", desc)
				} else {
					assert.Empty(t, after, "tried inside the paid hour before its last safe moment: %s", desc)
					for _, ev := range retries {
						assert.True(t, ev.At.Before(charge.From.Add(c.boundary)), "a retry planned past the boundary: %s", desc)
					}
					deferred := ofType(evs, fleet.EventReleaseDeferred)
					if assert.NotEmpty(t, deferred, "the wait for the paid hour is not said: %s", desc) {
						last := deferred[len(deferred)-1].At.Sub(charge.From)
						assert.True(t, last > c.boundary && last < 2*c.boundary, "put off to %v: %s", last, desc)
					}
					kept := charge.To.Sub(charge.From)
					assert.True(t, kept >= c.lift && kept < 2*c.boundary, "released %v after the billing start, not before the second hour's end: %s", kept, desc)
				}
				assert.NotEmpty(t, ofType(evs, fleet.EventTerminationStuck), "no alert: %s", desc)
				assert.Empty(t, ofType(evs, fleet.EventManualCleanup), "given up: %s", desc)
			}
		})
	}
}
