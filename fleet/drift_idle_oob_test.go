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

// oobCharge is the ledger charge of server id on either sim.
func oobCharge(e *env, id string) sim.Charge {
	e.t.Helper()
	for _, c := range append(e.vultr.Ledger().Charges, e.hot.Ledger().Charges...) {
		if c.ResourceID == id {
			return c
		}
	}
	e.t.Fatalf("no charge for %s", id)
	return sim.Charge{}
}

// oobAcquire waits (Run in the background) until Acquire hands out a node
// of fleet name.
func oobAcquire(t *testing.T, e *env, name string, limit time.Duration) fleet.Instance {
	t.Helper()
	for end := time.Now().Add(limit); ; time.Sleep(10 * time.Second) {
		x, err := e.m.Acquire(t.Context(), name)
		if err == nil {
			return x
		}
		require.ErrorIs(t, err, fleet.ErrNoIdle)
		require.True(t, time.Now().Before(end), "fleet %s: no node handed out in %v", name, limit)
	}
}

// A held node powered off out of band and started again
// (OnStoppedRestart) keeps "when it went idle and whether a job ended on
// it: it goes when it would have without the stop" (Spec.IdleTimeout).
// Without the stop the re-buy hold keeps it. Hot Aisle VM (fixed hold of
// one spare for 30 min; job to 35:00, held to 65:00, halted out of band at
// 40:00, next job at 55:00) and bare metal (default hold; job to 8:30,
// halted at 9:00, next job at 10:00). The next job should find the held
// node (once it is up again) rather than a new minimum be bought: the
// orchestrator Applies one more node when Acquire answers ErrNoIdle.
//
// (tester AY: before the fix, the VM was released at 40:10 instead of
// kept to 65:00 and the job at 55:00 bought a new minimum; the bare metal
// server was released at 9:00:21, and the job at 10:00 bought a new 8-h
// minimum, $216.96, and waited 10m10s.)
func TestHeldNodeStoppedAndRestartedKeepsItsHold(t *testing.T) {
	for _, c := range []struct {
		typ                  string
		pol                  fleet.Policy
		jobEnd, halt, nextAt time.Duration
	}{
		{"vm-mi300x-1", fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute}, 35 * time.Minute, 40 * time.Minute, 55 * time.Minute},
		{"bm-mi300x-8", fleet.Policy{}, 8*time.Hour + 30*time.Minute, 9 * time.Hour, 10 * time.Hour},
	} {
		t.Run(c.typ, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c.pol.OnStopped = fleet.OnStoppedRestart
				e := newEnv(t, c.pol)
				e.idleFleet("a", 1, 5*time.Minute, hotType(c.typ))
				stop := e.running()
				defer stop()
				x, err := e.m.Acquire(t.Context(), "a")
				require.NoError(t, err)
				from := oobCharge(e, x.ID).From
				time.Sleep(time.Until(from.Add(c.jobEnd)))
				require.NoError(t, e.m.MarkIdle(x.ID))
				time.Sleep(time.Until(from.Add(c.halt)))
				require.NoError(t, e.hot.HaltOutOfBand(x.ID))
				time.Sleep(time.Until(from.Add(c.nextAt)))
				for _, ev := range e.eventsOf(fleet.EventInstanceStopped) {
					t.Logf("+%v %s: %s", ev.Time.Sub(from).Round(time.Second), ev.Type, ev.Message)
				}
				ch := oobCharge(e, x.ID)
				t.Logf("held node at +%v: live %v, billed %v (to +%v)", c.nextAt, ch.Live, ch.Billed, ch.To.Sub(ch.From).Round(time.Second))
				if _, err := e.m.Acquire(t.Context(), "a"); err == nil {
					return // handed out at once
				}
				s := spec("a", 1, hotType(c.typ))
				s.IdleTimeout = 5 * time.Minute
				if n := e.m.Fleets()[0].Nodes; n == 0 {
					require.NoError(t, e.m.Apply(t.Context(), s)) // the orchestrator grows its fleet for the job
				}
				y := oobAcquire(t, e, "a", 2*time.Hour)
				t.Logf("the job at +%v got %s after %v (held node %s)", c.nextAt, y.ID, time.Since(from.Add(c.nextAt)), x.ID)
				usd := 0.0
				for i, ch := range servers(e.hot.Ledger().Charges) {
					t.Logf("charge %s billed %v $%.2f live %v", ch.ResourceID, ch.Billed, ch.USD, ch.Live)
					if i > 0 {
						usd += ch.USD
					}
				}
				assert.Equal(t, x.RequestID, y.RequestID, "the held node was dropped after its restart; the job bought a new minimum ($%.2f so far)", usd)
				require.NoError(t, e.m.MarkIdle(y.ID))
			})
		})
	}
}

// The held node of TestHeldNodeStoppedAndRestartedKeepsItsHold with no job
// after the restart, and its agent unreachable until after the hold's end
// (the machine slow to boot again): it still goes when the hold ends, as
// it would have without the stop — 35:00 + 30 min, 10 s early on the
// minute boundary: 65 minutes billed — while it boots again.
// Before the fix: released at the stop (41 minutes billed), the hold lost.
func TestHeldNodeBootingAgainGoesWhenItsHoldEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute, OnStopped: fleet.OnStoppedRestart, AgentTimeout: time.Hour})
		agent := &powerAgent{down: map[string]bool{}}
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: testOwner, Agent: agent})
		e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		defer stop()
		x, err := e.m.Acquire(t.Context(), "a")
		require.NoError(t, err)
		from := oobCharge(e, x.ID).From
		time.Sleep(time.Until(from.Add(35 * time.Minute)))
		require.NoError(t, e.m.MarkIdle(x.ID))
		time.Sleep(time.Until(from.Add(40 * time.Minute)))
		agent.set(x.ID, true)
		require.NoError(t, e.hot.HaltOutOfBand(x.ID))
		time.Sleep(time.Until(from.Add(80 * time.Minute)))
		agent.set(x.ID, false)
		for end := time.Now().Add(3 * time.Hour); time.Now().Before(end) && oobCharge(e, x.ID).Live; {
			time.Sleep(time.Minute)
		}
		c := oobCharge(e, x.ID)
		require.NotEmpty(t, e.eventsOf(fleet.EventInstanceStopped), "the halt was seen")
		t.Logf("billed %v, released +%v (%s)", c.Billed, c.To.Sub(c.From).Round(time.Second), c.Description)
		assert.False(t, c.Live)
		assert.Equal(t, 65*time.Minute, c.Billed, "a held node restarted after a stop out of band goes when its hold ends")
		assert.Len(t, servers(e.hot.Ledger().Charges), 1, "no other server bought")
	})
}
