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

// Delete of a fleet whose node is idle. Delete's doc releases every
// instance "by the release policy", and the default policy
// (ReleaseAtReservationEnd) releases at the end of the reservation window.
// A Hot Aisle VM (30-minute minimum):
//   - held past its minimum by a fixed hold (RebuySpares 1, RebuyHold 30
//     min) or the default one (break-even, chosen from the fleet's jobs),
//     job to 35:00, Delete at 40:00: the window is long over and a deleted
//     fleet has no next job to hold for; gone by about 41:00;
//   - waiting for its minimum's end (job to 12:00, IdleTimeout 5 min,
//     Delete at 15:00): it goes at the minimum's end less the margin,
//     billed the 30-minute minimum and no more.
//
// (tester AY: held on main; kept as a check of a rule that might break.)
func TestDeleteOfAnIdleNodesFleet(t *testing.T) {
	for _, c := range []struct {
		name             string
		pol              fleet.Policy
		jobEnd, deleteAt time.Duration
		atMost           time.Duration // billed
	}{
		{"fixed hold", fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute}, 35 * time.Minute, 40 * time.Minute, 41 * time.Minute},
		{"default hold", fleet.Policy{}, 35 * time.Minute, 40 * time.Minute, 41 * time.Minute},
		{"inside the minimum", fleet.Policy{}, 12 * time.Minute, 15 * time.Minute, 30 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, c.pol)
				e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
				stop := e.running()
				defer stop()
				x, _ := jobThenIdle(t, e, "a", c.jobEnd, c.deleteAt)
				require.True(t, serverCharge(e, x.ID).Live, "released before the Delete")
				require.NoError(t, e.m.Delete(t.Context(), "a"))
				got := waitChargeEnds(e, x.ID, 3*time.Hour)
				t.Logf("billed %v after Delete at %v (%s)", got.Billed, c.deleteAt, got.Description)
				assert.False(t, got.Live)
				assert.LessOrEqual(t, got.Billed, c.atMost, "a deleted fleet's idle node kept past its window")
				assert.GreaterOrEqual(t, got.Billed, 30*time.Minute, "the minimum is billed whole")
			})
		})
	}
}

// An explicit Release of a held node with the default policy: the node is
// past its minimum, so its reservation window is over and Release answers
// now; it must go now, not when the hold would have ended.
//
// (tester AY: held on main; kept as a check of a rule that might break.)
func TestReleaseHeldNode(t *testing.T) {
	for _, p := range []fleet.ReleasePolicy{"", fleet.ReleaseAtReservationEnd, fleet.ReleaseCompat, fleet.ReleaseNow} {
		t.Run(string(p)+"_", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute})
				e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
				stop := e.running()
				defer stop()
				x, from := jobThenIdle(t, e, "a", 35*time.Minute, 40*time.Minute)
				var opts []fleet.ReleaseOption
				if p != "" {
					opts = append(opts, fleet.WithReleasePolicy(p))
				}
				at, err := e.m.Release(t.Context(), x.ID, opts...)
				require.NoError(t, err)
				c := waitChargeEnds(e, x.ID, 3*time.Hour)
				t.Logf("policy %q: Release answered +%v; billed %v (%s)", p, at.Sub(from), c.Billed, c.Description)
				assert.LessOrEqual(t, at.Sub(from), 40*time.Minute+time.Second)
				assert.LessOrEqual(t, c.Billed, 41*time.Minute, "policy %q: released held node billed %v", p, c.Billed)
				// the fleet wants 1 node still: a replacement is bought
				// (documented: "A fleet that still wants the node replaces it").
			})
		})
	}
}

// An orchestrator that does not use Acquire marks its jobs with MarkBusy
// and MarkIdle. The re-buy hold counts jobs "from Acquire, MarkBusy and
// MarkIdle": the same job must be billed the same either way. Hot Aisle
// VM, default policy, one job from 8:00 to 35:00 after the billing start.
//
// (tester AY: held on main; kept as a check of a rule that might break.)
func TestMarkBusyWithoutAcquireHoldsAlike(t *testing.T) {
	billed := map[bool]time.Duration{}
	for _, viaAcquire := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, fleet.Policy{})
			in := e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))[0]
			stop := e.running()
			defer stop()
			from := serverCharge(e, in.ID).From
			time.Sleep(time.Until(from.Add(8 * time.Minute)))
			if viaAcquire {
				x, err := e.m.Acquire(t.Context(), "a")
				require.NoError(t, err)
				require.Equal(t, in.ID, x.ID)
			} else {
				require.NoError(t, e.m.MarkBusy(in.ID))
			}
			time.Sleep(time.Until(from.Add(35 * time.Minute)))
			require.NoError(t, e.m.MarkIdle(in.ID))
			c := waitChargeEnds(e, in.ID, 3*time.Hour)
			billed[viaAcquire] = c.Billed
			t.Logf("via Acquire %v: billed %v (%s)", viaAcquire, c.Billed, c.Description)
		})
	}
	assert.Equal(t, billed[true], billed[false], "MarkBusy-only orchestrator billed differently from Acquire for the same job")
}

// MarkIdle repeated on a held node changes nothing (MarkIdle's doc: an
// orchestrator that repeats its idle marks does not keep a node running
// past its release). Hot Aisle VM, RebuySpares 1, RebuyHold 10 min, job
// to 35:00, MarkIdle again at 38:00 and 43:00: the hold ends at 45:00
// (10 s early on a minute boundary).
//
// (tester AY: held on main; kept as a check of a rule that might break.)
func TestMarkIdleRepeatedOnHeldNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 10 * time.Minute})
		e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		defer stop()
		x, from := jobThenIdle(t, e, "a", 35*time.Minute, 38*time.Minute)
		require.NoError(t, e.m.MarkIdle(x.ID))
		time.Sleep(time.Until(from.Add(43 * time.Minute)))
		_ = e.m.MarkIdle(x.ID)
		c := waitChargeEnds(e, x.ID, 3*time.Hour)
		t.Logf("billed %v (%s)", c.Billed, c.Description)
		assert.LessOrEqual(t, c.Billed, 45*time.Minute, "repeated MarkIdle extended the hold")
	})
}

// oneJobCharge runs one job on a one-node fleet of req (IdleTimeout idle,
// policy pol): handed out by Acquire as soon as the node is ready, given
// back with MarkIdle at end after the billing start. It returns the
// node's charge once it stopped billing (or after 20 h), and the ready
// time after the billing start.
func oneJobCharge(t *testing.T, pol fleet.Policy, req fleet.Requirements, idle, end time.Duration) (sim.Charge, time.Duration) {
	var c sim.Charge
	var ready time.Duration
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, pol)
		s := spec("j", 1, req)
		s.IdleTimeout = idle
		require.NoError(t, e.m.Apply(t.Context(), s))
		stop := e.running()
		defer stop()
		x := acquireWithin(t, e, "j", 3*time.Hour)
		from := serverCharge(e, x.ID).From
		ready = time.Since(from)
		require.True(t, time.Now().Before(from.Add(end)), "ready at +%v, after the job's end", ready)
		time.Sleep(time.Until(from.Add(end)))
		require.NoError(t, e.m.MarkIdle(x.ID))
		c = waitChargeEnds(e, x.ID, 20*time.Hour)
	})
	return c, ready
}

// Vultr bare metal (17.52 USD/h, active 40 min after create, deletes
// refused 5 min after that): one job from ready to end. The rules: an
// idle node goes at once when a delete can still land in its hour, at the
// hour's last safe moment (57:00) when idle before it, and is kept to the
// next hour's 57:00 once less than 10 s of its hour is left.
func TestVultrMetalJobEndsNearHour(t *testing.T) {
	for _, c := range []struct {
		idle, end, want time.Duration
	}{
		{10 * time.Minute, 44 * time.Minute, time.Hour}, // inside the delete lock
		{10 * time.Minute, 56 * time.Minute, time.Hour},
		{3 * time.Hour, 50 * time.Minute, time.Hour}, // IdleTimeout over the hour plays no part
		{10 * time.Minute, 57*time.Minute + 30*time.Second, time.Hour},
		{10 * time.Minute, 59*time.Minute + 40*time.Second, time.Hour},
		{10 * time.Minute, 60*time.Minute + 30*time.Second, 2 * time.Hour},
		{10 * time.Minute, 116*time.Minute + 59*time.Second, 2 * time.Hour},
		{10 * time.Minute, 117*time.Minute + 30*time.Second, 2 * time.Hour},
	} {
		t.Run(c.idle.String()+"/"+c.end.String(), func(t *testing.T) {
			got, ready := oneJobCharge(t, fleet.Policy{}, vultrType("vbm-256c-2048gb-8-mi300x-gpu"), c.idle, c.end)
			t.Logf("job ends +%v (ready +%v): billed %v, released +%v (%s)", c.end, ready.Round(time.Second), got.Billed, got.To.Sub(got.From), got.Description)
			assert.Equal(t, c.want, got.Billed, "job ended +%v", c.end)
		})
	}
}

// Hot Aisle bare metal (8 h prepaid, 27.12 USD/h) and VM (30 min): a job
// ending near the minimum's end. RebuyHoldOff: the hold's worst case is
// known; these check the release rule alone. IdleTimeout 10 min, and 9 h
// (longer than the minimum: it must not carry a node whose job ended
// inside the minimum past it).
func TestHotAisleJobEndsNearMinimum(t *testing.T) {
	for _, c := range []struct {
		typ       string
		idle, end time.Duration
		want      time.Duration
	}{
		{"bm-mi300x-8", 10 * time.Minute, 470 * time.Minute, 480 * time.Minute},
		{"bm-mi300x-8", 9 * time.Hour, 470 * time.Minute, 480 * time.Minute},
		{"bm-mi300x-8", 10 * time.Minute, 479*time.Minute + 30*time.Second, 480 * time.Minute},
		{"bm-mi300x-8", 10 * time.Minute, 480*time.Minute + 30*time.Second, 491 * time.Minute},
		{"vm-mi300x-1", 10 * time.Minute, 29*time.Minute + 20*time.Second, 30 * time.Minute},
		{"vm-mi300x-1", 2 * time.Hour, 29 * time.Minute, 30 * time.Minute},
		{"vm-mi300x-1", 10 * time.Minute, 30*time.Minute + 5*time.Second, 41 * time.Minute},
	} {
		t.Run(c.typ+"/"+c.idle.String()+"/"+c.end.String(), func(t *testing.T) {
			got, ready := oneJobCharge(t, fleet.Policy{RebuyHoldOff: true}, hotType(c.typ), c.idle, c.end)
			t.Logf("job ends +%v (ready +%v, IdleTimeout %v): billed %v, to +%v (%s)", c.end, ready.Round(time.Second), c.idle, got.Billed, got.To.Sub(got.From), got.Description)
			assert.LessOrEqual(t, got.Billed, c.want, "job ended +%v", c.end)
		})
	}
}

// Policy edges of the re-buy hold on one Hot Aisle VM (job to 35:00 after
// the billing start, IdleTimeout 5 min, no job after): RebuyHoldOff wins
// over RebuySpares/RebuyHold (released at 40:00); a fixed hold of 1 ns is
// no hold (40:00); RebuySpares 100 keeps the one node RebuyHold (35:00 +
// 20 min = 55:00); IdleTimeout 0 with a fixed hold: "0: never by
// idleness" (still live 5 h later).
func TestHoldPolicyEdges(t *testing.T) {
	for _, c := range []struct {
		name string
		pol  fleet.Policy
		idle time.Duration
		want time.Duration // billed; 0: still live
	}{
		{"HoldOffWins", fleet.Policy{RebuyHoldOff: true, RebuySpares: 1, RebuyHold: 30 * time.Minute}, 5 * time.Minute, 40 * time.Minute},
		{"Hold1ns", fleet.Policy{RebuySpares: 1, RebuyHold: time.Nanosecond}, 5 * time.Minute, 40 * time.Minute},
		{"Spares100", fleet.Policy{RebuySpares: 100, RebuyHold: 20 * time.Minute}, 5 * time.Minute, 55 * time.Minute},
		{"IdleTimeout0", fleet.Policy{RebuySpares: 1, RebuyHold: 20 * time.Minute}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, c.pol)
				e.idleFleet("a", 1, c.idle, hotType("vm-mi300x-1"))
				stop := e.running()
				defer stop()
				x, err := e.m.Acquire(t.Context(), "a")
				require.NoError(t, err)
				from := serverCharge(e, x.ID).From
				time.Sleep(time.Until(from.Add(35 * time.Minute)))
				require.NoError(t, e.m.MarkIdle(x.ID))
				ch := waitChargeEnds(e, x.ID, 5*time.Hour)
				t.Logf("%s: billed %v, live %v (%s)", c.name, ch.Billed, ch.Live, ch.Description)
				if c.want == 0 {
					assert.True(t, ch.Live)
					return
				}
				assert.False(t, ch.Live)
				assert.Equal(t, c.want, ch.Billed)
			})
		})
	}
}
