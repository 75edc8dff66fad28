package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// adoptIdle runs fleet f (one Hot Aisle node of plan, IdleTimeout idle) to
// idle, then restarts the Manager with an empty Store and applies the
// same fleet: the new Manager adopts the node without knowing its start
// (Hot Aisle gives none).
func (e *env) adoptIdle(plan string, idle time.Duration) {
	e.t.Helper()
	e.idleFleet("f", 1, idle, hotType(plan))
	e.m.Close()
	e.m = e.manager(fleet.NewMemoryStore())
	s := spec("f", 1, hotType(plan))
	s.IdleTimeout = idle
	require.NoError(e.t, e.m.Apply(e.t.Context(), s))
}

// Adopted after an empty-Store restart: Hot Aisle gives no start time, so
// an adopted server's minimum (paid whole at reservation) cannot be known.
// An idle bare-metal server adopted a few minutes after its reservation
// has 8 prepaid hours: releasing it 10 minutes (IdleTimeout) after adoption
// saves nothing (the minimum is charged whole) and a job coming later buys
// another 8 hours. Acceptance 1: "IdleTimeout only applies where releasing
// later costs more". Expected: still live 30 minutes later, no forced
// release (tester K's probe).
func TestAdoptedHotAisleIdleNotForcedInsideItsMinimum(t *testing.T) {
	for _, plan := range []string{"bm-mi300x-8", "vm-mi300x-2"} {
		t.Run(plan, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				e.adoptIdle(plan, 10*time.Minute)
				stop := e.running()
				time.Sleep(30 * time.Minute)
				stop()
				assert.Equal(t, 1, liveOf(e, "hotaisle"), "the adopted server (paid for its minimum) was released while idle: forced %d, events %v",
					len(e.eventsOf(fleet.EventReleaseForced)), e.eventsOf(fleet.EventReleaseForced))
				for _, ch := range servers(e.hot.Ledger().Charges) {
					assert.Zero(t, ch.Unrefunded, "%s: %s", ch.Plan, ch.Description)
				}
			})
		})
	}
}

// The same adopted servers, to the end: the release the provider refuses
// for the minimum waits, tried again every MinuteReleaseMargin, and lands
// when the minimum is over, never forced inside it: each server is billed
// its minimum plus at most the margin, with nothing unrefunded, and the
// refusals raise no TerminationStuck alert (the server is paid anyway).
func TestAdoptedHotAisleIdleReleasedWhenItsMinimumEnds(t *testing.T) {
	for _, c := range []struct {
		plan    string
		minimum time.Duration
	}{{"bm-mi300x-8", 8 * time.Hour}, {"vm-mi300x-2", time.Hour}, {"vm-mi300x-1", 30 * time.Minute}} {
		t.Run(c.plan, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				e.adoptIdle(c.plan, 5*time.Minute)
				stop := e.running()
				time.Sleep(c.minimum + time.Hour)
				stop()
				assert.Zero(t, liveOf(e, "hotaisle"), "released once its minimum is over")
				for _, ch := range servers(e.hot.Ledger().Charges) {
					assert.Zero(t, ch.Unrefunded, "%s: %s", ch.Plan, ch.Description)
					assert.LessOrEqual(t, ch.Billed, c.minimum+time.Minute, "%s", ch.Description)
				}
				assert.Zero(t, e.count(fleet.EventTerminationStuck), "refusals for a paid minimum are no stuck release")
				assert.Positive(t, e.count(fleet.EventReleaseDeferred), "the wait is said")
			})
		})
	}
}

// While the release of an adopted server waits for its unknown minimum
// (refused by the provider), the fleet grows again: the server, paid
// anyway, is taken back (ReleaseCancelled) instead of buying another
// minimum.
func TestAdoptedServerWaitingForItsMinimumIsTakenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.adoptIdle("bm-mi300x-8", 5*time.Minute)
		require.True(t, e.runUntil(time.Hour, func() bool { return e.count(fleet.EventReleaseDeferred) > 0 }), "the release refused for the minimum")
		require.Equal(t, 0, e.m.Fleets()[0].Nodes, "the idle release shrank the fleet")
		s := e.m.Fleets()[0]
		s.Nodes = 1
		s.IdleTimeout = 0
		require.NoError(t, e.m.Apply(t.Context(), s))
		e.run(10 * time.Minute)
		assert.Equal(t, 1, e.count(fleet.EventReleaseCancelled), "taken back")
		assert.Len(t, servers(e.hot.Ledger().Charges), 1, "no second server bought")
		in := e.only("f")
		assert.Equal(t, fleet.StatusIdle, in.Status)
	})
}
