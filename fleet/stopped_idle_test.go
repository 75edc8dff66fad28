package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Hot Aisle bare-metal server (8 h prepaid, $27.12/h) ran one job from
// 0 to 8:30; idle after it, the re-buy hold keeps it (one spare for 2 h).
// At 8:45 it is powered off out of band (a console user) with the default
// OnStopped (replace). Nobody has a job for the fleet: the stopped idle
// spare should be released (it still bills) and the fleet should not buy a
// new 8-hour minimum to replace a node that had no job — the least possible
// bill is the one server, about 8:45 (a stop ends the hold's bet at best).
//
// Before (tester AS): the stopped spare is released and a replacement is
// reserved at once; it never runs a job and is billed 600 minutes (its
// 480-minute minimum, then the 2 h hold past it): $271.20 for no job.
func TestStoppedHeldSpareIsNotReplacedByANewMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 2 * time.Hour})
		e.idleFleet("f", 1, 5*time.Minute, hotType("bm-mi300x-8"))
		stop := e.running()
		defer stop()
		x, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		from := servers(e.hot.Ledger().Charges)[0].From
		time.Sleep(time.Until(from.Add(8*time.Hour + 30*time.Minute)))
		require.NoError(t, e.m.MarkIdle(x.ID))
		time.Sleep(15 * time.Minute)
		require.True(t, servers(e.hot.Ledger().Charges)[0].Live, "the spare is held")
		require.NoError(t, e.hot.HaltOutOfBand(x.ID))
		time.Sleep(20 * time.Hour)
		var extra time.Duration
		n := 0
		for _, c := range servers(e.hot.Ledger().Charges) {
			n++
			t.Logf("%s billed %v live %v (%s)", c.ResourceID, c.Billed, c.Live, c.Description)
			if !c.From.Equal(from) { // the sim reuses server names: tell them by billing start
				extra += c.Billed
			}
		}
		assert.Equal(t, 1, n, "a replacement was reserved for an idle spare nobody had a job for: %v billed", extra)
		assert.Zero(t, extra, "billed for the replacement of a stopped idle spare")
	})
}

// The same on Vultr bare metal (hourly, $17.52/h, ~40-min boot): one job
// from the server's billing start to 1:40, the idle release then due at
// the second hour's last safe moment. At 1:45 the idle server is powered
// off out of band (default OnStopped, replace). The fleet has no job: the
// stopped idle server should be released inside its paid second hour and
// nothing new bought. Least possible: 2 h, $35.04.
//
// Before (tester AS): a replacement is created at once, boots 40 minutes
// idle and is released at its first hour's last safe moment: 1 h billed
// ($17.52) for a server that never runs a job.
func TestStoppedIdleVultrBareMetalIsNotReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.idleFleet("f", 1, 5*time.Minute, vultrType("vbm-256c-2048gb-8-mi300x-gpu"))
		stop := e.running()
		defer stop()
		x, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		from := servers(e.vultr.Ledger().Charges)[0].From
		time.Sleep(time.Until(from.Add(time.Hour + 40*time.Minute)))
		require.NoError(t, e.m.MarkIdle(x.ID))
		time.Sleep(5 * time.Minute)
		require.True(t, servers(e.vultr.Ledger().Charges)[0].Live, "idle, not released yet")
		require.NoError(t, e.vultr.HaltOutOfBand(x.ID))
		time.Sleep(6 * time.Hour)
		var extra time.Duration
		n := 0
		for _, c := range servers(e.vultr.Ledger().Charges) {
			if c.Kind == "vpc" {
				continue
			}
			n++
			t.Logf("%s %s billed %v live %v (%s)", c.ResourceID, c.Plan, c.Billed, c.Live, c.Description)
			if c.ResourceID != x.ID {
				extra += c.Billed
			}
		}
		assert.Equal(t, 1, n, "a replacement was created for an idle server nobody had a job for: %v billed", extra)
		assert.Zero(t, extra, "billed for the replacement of a stopped idle server")
	})
}
