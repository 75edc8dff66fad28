package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runInBackground starts Run in the bubble and returns its stop.
func runInBackground(t *testing.T, m *fleet.Manager) func() {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return func() { cancel(); <-done }
}

func callsSoFar(e *env) int { return len(e.vultr.Calls()) + len(e.hot.Calls()) }

func allIdle(m *fleet.Manager, name string, n int) func() bool {
	return func() bool {
		insts := m.Instances(name)
		if len(insts) != n {
			return false
		}
		for _, i := range insts {
			if i.Status != fleet.StatusIdle {
				return false
			}
		}
		return true
	}
}

func waitUntil(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(time.Minute) {
		require.True(t, time.Now().Before(deadline), "condition not reached")
	}
}

// callsByRoute tallies calls by route, for the log.
func callsByRoute(log []sim.Call, from int) map[string]int {
	out := map[string]int{}
	for _, c := range log[from:] {
		out[c.Route]++
	}
	return out
}

// TestIdleFleetCallsPerInstanceHour: 20 Vultr VMs and 20 Hot Aisle VMs
// sit idle for 6 hours with an Agent checking them; the listing that
// serves drift checks is one per provider and kind, so calls per
// instance-hour stay well under one.
func TestIdleFleetCallsPerInstanceHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuyHoldOff: true})
		e.m.Close()
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: testOwner, Agent: newSwitchAgent()})
		e.hot.SetVMLimit(1000)
		require.NoError(t, e.hot.SetQuantity("vm-mi300x-1", 1000))
		stop := runInBackground(t, e.m)
		require.NoError(t, e.m.Apply(t.Context(), spec("v", 20, vultrVM("ewr"))))
		require.NoError(t, e.m.Apply(t.Context(), spec("h", 20, hotType("vm-mi300x-1"))))
		waitUntil(t, time.Hour, func() bool { return allIdle(e.m, "v", 20)() && allIdle(e.m, "h", 20)() })
		time.Sleep(30 * time.Minute)
		v0, h0 := len(e.vultr.Calls()), len(e.hot.Calls())
		time.Sleep(6 * time.Hour)
		v, h := len(e.vultr.Calls())-v0, len(e.hot.Calls())-h0
		t.Logf("6 idle hours: vultr %d calls %v; hotaisle %d calls %v", v, callsByRoute(e.vultr.Calls(), v0), h, callsByRoute(e.hot.Calls(), h0))
		assert.LessOrEqual(t, float64(v)/(20*6), 0.5, "vultr calls per idle instance-hour")
		assert.LessOrEqual(t, float64(h)/(20*6), 0.5, "hot aisle calls per idle instance-hour")
		stop()
	})
}

// TestDeletingFleetWaitsQuietly: 10 Hot Aisle 2x VMs (60-minute minimum)
// deleted 5 minutes after they are ready, released at the end of their
// minimum; while the releases wait, the Manager has nothing due, so the
// calls from Delete to the fleet gone are a few per instance.
func TestDeletingFleetWaitsQuietly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuyHoldOff: true})
		e.m.Close()
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: testOwner, Agent: newSwitchAgent()})
		e.hot.SetVMLimit(1000)
		require.NoError(t, e.hot.SetQuantity("vm-mi300x-2", 1000))
		stop := runInBackground(t, e.m)
		require.NoError(t, e.m.Apply(t.Context(), spec("h", 10, hotType("vm-mi300x-2"))))
		waitUntil(t, time.Hour, allIdle(e.m, "h", 10))
		time.Sleep(5 * time.Minute)
		h0 := len(e.hot.Calls())
		require.NoError(t, e.m.Delete(t.Context(), "h"))
		waitUntil(t, 3*time.Hour, func() bool { return len(e.m.Fleets()) == 0 })
		h := len(e.hot.Calls()) - h0
		t.Logf("delete to gone: %d calls %v", h, callsByRoute(e.hot.Calls(), h0))
		assert.LessOrEqual(t, float64(h)/10, 4.0, "calls per instance while its release waits for the minimum")
		stop()
		e.assertNothingLeft()
	})
}

// TestVultrBareMetalClusterCalls: a 2-node Vultr MI300X bare-metal
// cluster (VPC, 40-minute boot) through its whole lifecycle stays within
// the one-server budget of 30 calls per instance.
func TestVultrBareMetalClusterCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		stop := runInBackground(t, e.m)
		time.Sleep(10 * time.Minute)
		c0 := callsSoFar(e)
		s := spec("bm", 2, vultrType(mi300x))
		s.Placement = fleet.PlacementCluster
		require.NoError(t, e.m.Apply(t.Context(), s))
		waitUntil(t, 3*time.Hour, allIdle(e.m, "bm", 2))
		boot := callsSoFar(e) - c0
		require.NoError(t, e.m.Delete(t.Context(), "bm"))
		waitUntil(t, 3*time.Hour, func() bool { return len(e.m.Fleets()) == 0 })
		time.Sleep(time.Hour)
		total := callsSoFar(e) - c0
		t.Logf("boot %d, lifecycle %d calls: %v", boot, total, callsByRoute(e.vultr.Calls(), 0))
		assert.LessOrEqual(t, float64(total)/2, 30.0)
		stop()
		e.assertNothingLeft()
	})
}
