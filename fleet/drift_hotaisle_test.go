package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bmDrift is a drift world on bare metal of one cloud.
func bmDrift(t *testing.T, cloud string) *drift {
	d := newDrift(t, cloud, fleet.Policy{})
	d.req = fleet.Requirements{Providers: []string{"vultr"}, InstanceTypes: []string{"vbm-24c-256gb-amd"}, Regions: []string{"ewr"}}
	if cloud == "hotaisle" {
		d.req = hotType("bm-mi300x-8")
	}
	return d
}

func (d *drift) readyBM() fleet.Instance {
	d.t.Helper()
	require.NoError(d.t, d.m.Apply(d.t.Context(), spec("f", 1, d.req)))
	require.True(d.t, d.runUntil(2*time.Hour, func() bool { return d.only("f").Status == fleet.StatusIdle }))
	return d.only("f")
}

// Issue 11 point 3 (stopped out of band; Hot Aisle "from the VM state when
// the agent check fails or on a slow schedule"): a Manager without an Agent
// never runs agent checks, so a Hot Aisle VM or bare-metal server halted out
// of band stays idle and billing for hours.
func TestHotAisleHaltedWithoutAgentIsNoticed(t *testing.T) {
	for _, typ := range []string{"vm-mi300x-1", "bm-mi300x-8"} {
		t.Run(typ, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, hotType(typ))))
				require.True(t, e.runUntil(time.Hour, func() bool { return e.only("f").Status == fleet.StatusIdle }))
				old := e.only("f").ID
				require.NoError(t, e.hot.HaltOutOfBand(old))
				e.run(3 * time.Hour)
				assert.Positive(t, e.count(fleet.EventInstanceStopped), "the halt was noticed")
				for _, i := range e.m.Instances("f") {
					if i.ID == old {
						assert.NotEqual(t, fleet.StatusIdle, i.Status, "the halted machine is not idle 3 h later")
					}
				}
			})
		})
	}
}

// With an agent, a halted Hot Aisle bare-metal server is taken for a sick
// agent, never seen as stopped: Get does not read power/ for bare metal.
func TestHotAisleBareMetalHaltIsSeenAsStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := bmDrift(t, "hotaisle")
		old := d.readyBM().ID
		d.halt(old)
		d.agent.set(old, true)
		d.run(time.Hour)
		assert.Positive(t, d.count(fleet.EventInstanceStopped), "stopped, not 'agent unhealthy'")
	})
}

// powerCheckCost runs n ready Hot Aisle instances of typ idle under Run
// for 3 hours without an Agent and returns the calls per instance-hour:
// all of them, and those of the power route alone.
func powerCheckCost(t *testing.T, typ, powerRoute string, n int) (all, power float64) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.hot.SetVMLimit(1000)
		require.NoError(t, e.hot.SetQuantity(typ, 1000))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- e.m.Run(ctx) }()
		time.Sleep(time.Hour) // past the sweeps of the Manager's first hour
		require.NoError(t, e.m.Apply(t.Context(), spec("f", n, hotType(typ))))
		for deadline := time.Now().Add(time.Hour); ; time.Sleep(time.Minute) {
			idle := 0
			for _, i := range e.m.Instances("f") {
				if i.Status == fleet.StatusIdle {
					idle++
				}
			}
			if idle == n {
				break
			}
			require.True(t, time.Now().Before(deadline), "not ready")
		}
		before := e.hot.Calls()
		time.Sleep(3 * time.Hour)
		after := e.hot.Calls()[len(before):]
		cancel()
		<-done
		hours := 3 * float64(n)
		all, power = float64(len(after))/hours, float64(calls(after, powerRoute, 200))/hours
		assert.Zero(t, e.count(fleet.EventInstanceStopped))
	})
	return all, power
}

// Without an Agent, each idle Hot Aisle instance costs one power read per
// Policy.DriftCheckInterval (10 min): 6 calls per instance-hour, besides
// the listing every 10 minutes that serves them all.
func TestHotAislePowerChecksCostSixCallsPerInstanceHour(t *testing.T) {
	for _, c := range []struct {
		typ, route string
		n          int
	}{
		{"vm-mi300x-1", "GET /api/teams/{team}/virtual_machines/{vm}/state/", 10},
		{"bm-mi300x-8", "GET /api/teams/{team}/bare_metal/{server}/power/", 2},
	} {
		t.Run(c.typ, func(t *testing.T) {
			all, power := powerCheckCost(t, c.typ, c.route, c.n)
			t.Logf("%s: %.2f calls per instance-hour, %.2f of them power reads", c.typ, all, power)
			assert.InDelta(t, 6, power, 0.5)
			assert.LessOrEqual(t, all, 6+6/float64(c.n)+0.1, "besides: one listing per 10 minutes for them all")
		})
	}
}

// Without an Agent and with OnStoppedRestart, a Hot Aisle VM halted out of
// band is noticed by its power check and powered on again, not replaced.
func TestHotAisleHaltedWithoutAgentIsRestarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OnStopped: fleet.OnStoppedRestart})
		old := e.haltedHotAisle("vm-mi300x-1")
		e.run(time.Minute)
		assert.Equal(t, 1, calls(e.hot.Calls(), "POST /api/teams/{team}/virtual_machines/{vm}/start/", 204))
		require.Len(t, activeOf(e.m.Instances("f")), 1, "not replaced")
		assert.Equal(t, old, e.only("f").ID)
		assert.Equal(t, fleet.StatusIdle, e.only("f").Status)
	})
}

// With an Agent, no power reads are made on a schedule: the agent checks
// stand for them, and a failed one asks Get.
func TestHotAisleNoPowerChecksWithAnAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDrift(t, "hotaisle", fleet.Policy{})
		d.ready()
		d.run(time.Hour)
		assert.Zero(t, calls(d.hot.Calls(), "GET /api/teams/{team}/virtual_machines/{vm}/state/", 0))
	})
}

// haltedHotAisle applies a one-node Hot Aisle fleet "f" of typ, halts its
// instance out of band once idle, and returns the instance's id once the
// Manager has seen it stopped.
func (e *env) haltedHotAisle(typ string) string {
	e.t.Helper()
	require.NoError(e.t, e.m.Apply(e.t.Context(), spec("f", 1, hotType(typ))))
	require.True(e.t, e.runUntil(time.Hour, func() bool { return e.only("f").Status == fleet.StatusIdle }))
	id := e.only("f").ID
	require.NoError(e.t, e.hot.HaltOutOfBand(id))
	require.True(e.t, e.runUntil(15*time.Minute, func() bool { return e.count(fleet.EventInstanceStopped) > 0 }))
	return id
}
