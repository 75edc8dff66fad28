package fleet_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wave is a batch of jobs arriving together: n jobs of length d, at at
// after the start.
type wave struct {
	at time.Duration
	n  int
	d  time.Duration
}

// controllerRun runs the controller pattern Spec.IdleTimeout documents on
// fleet "w" of req (MinNodes 1, IdleTimeout idle) under the default policy
// while the waves of jobs come: every minute, 30 s off the Manager's
// minute, it reads Nodes back from Fleets and applies it, or busy+waiting
// jobs when that is more ("unless there is work for more"). Each job
// Acquires a node (polling every 10 s while ErrNoIdle), runs, and gives
// it back. It returns the longest wait of a job and the env.
func controllerRun(t *testing.T, req fleet.Requirements, idle time.Duration, waves []wave, total time.Duration, setup func(*env)) (*env, time.Duration, time.Time) {
	t.Helper()
	e := newEnv(t, fleet.Policy{})
	if setup != nil {
		setup(e)
	}
	s := spec("w", 1, req)
	s.MinNodes, s.IdleTimeout = 1, idle
	e.idleFleet("w", 1, idle, req)
	require.NoError(t, e.m.Apply(t.Context(), s))
	stop := e.running()
	defer stop()
	start := time.Now()
	var mu sync.Mutex
	waiting, busy := 0, 0
	var longest time.Duration
	var wg sync.WaitGroup
	for _, w := range waves {
		for range w.n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(w.at)
				mu.Lock()
				waiting++
				mu.Unlock()
				at := time.Now()
				x, err := acquirePolling(t.Context(), e, "w")
				if err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				mu.Lock()
				waiting--
				busy++
				longest = max(longest, time.Since(at))
				mu.Unlock()
				time.Sleep(w.d)
				if err := e.m.GiveBack(x); err != nil {
					t.Errorf("giveback: %v", err)
				}
				mu.Lock()
				busy--
				mu.Unlock()
			}()
		}
	}
	time.Sleep(30 * time.Second)
	for time.Since(start) < total {
		n := nodesReadBack(e, "w")
		mu.Lock()
		want := busy + waiting
		mu.Unlock()
		s.Nodes = max(n, want)
		require.NoError(t, e.m.Apply(t.Context(), s))
		time.Sleep(time.Minute)
	}
	wg.Wait()
	return e, longest, start
}

// The documented controller (Spec.IdleTimeout: apply the Nodes read back
// from Fleets unless there is work for more; MinNodes for the nodes wanted
// at all times) with jobs coming in waves: 2 jobs at 0:10 (30 min), 3 at
// 2:10 (30 min), 1 at 5:10 (20 min), over 8 h, MinNodes 1. A user expects
// each wave to buy only the nodes it lacks (1, then 2; the last wave runs
// on the MinNodes node): 4 servers in all, the fleet back at Nodes 1 with
// one server live at the end, no job waiting longer than a boot. Hot
// Aisle bare metal (row set to 4 servers; an 8-h minimum, so the run ends
// inside it): servers bought and waits only. Kept as a
// guard of the documented pattern (with the pool of 2 servers the third
// job of wave 2 waits 30 min for stock, and Nodes stays 3 with 2 servers:
// the raise over the stock is never lowered inside the minimum; see
// TestNoGiveWayToAFleetWithIdleMembers for what that must not cost other
// fleets).
func TestDocumentedControllerWithWaves(t *testing.T) {
	waves := []wave{{10 * time.Minute, 2, 30 * time.Minute}, {130 * time.Minute, 3, 30 * time.Minute}, {310 * time.Minute, 1, 20 * time.Minute}}
	for _, c := range []struct {
		name string
		req  fleet.Requirements
		idle time.Duration
		boot time.Duration
		led  func(e *env) []sim.Charge
		// setup prepares the fakes; hold: the default re-buy hold may
		// keep a server past the run (an 8-h minimum)
		setup func(*env)
		hold  bool
	}{
		{"vultr-vm", vultrType(vm), 5 * time.Minute, 10 * time.Minute, func(e *env) []sim.Charge { return servers(e.vultr.Ledger().Charges) }, nil, false},
		{"hot-vm", hotType("vm-mi300x-1"), 5 * time.Minute, 15 * time.Minute, func(e *env) []sim.Charge { return servers(e.hot.Ledger().Charges) }, nil, false},
		{"hot-bm", hotType("bm-mi300x-8"), 5 * time.Minute, 20 * time.Minute, func(e *env) []sim.Charge { return servers(e.hot.Ledger().Charges) },
			func(e *env) { require.NoError(t, e.hot.SetQuantity("bm-mi300x-8", 4)) }, true},
		{"vultr-bm", vultrType("vbm-256c-2048gb-8-mi300x-gpu"), 5 * time.Minute, 60 * time.Minute, func(e *env) []sim.Charge { return servers(e.vultr.Ledger().Charges) }, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, longest, start := controllerRun(t, c.req, c.idle, waves, 8*time.Hour, c.setup)
				var usd float64
				n, live := 0, 0
				for _, ch := range c.led(e) {
					t.Logf("%s %s from +%v billed %v $%.2f live %v", ch.ResourceID, ch.Plan, ch.From.Sub(start).Round(time.Second), ch.Billed, ch.USD, ch.Live)
					usd += ch.USD
					n++
					if ch.Live {
						live++
					}
				}
				t.Logf("servers %d ($%.2f), live at the end %d, Nodes %d, longest job wait %v", n, usd, live, nodesReadBack(e, "w"), longest)
				assert.LessOrEqual(t, n, 4, "servers bought")
				if !c.hold {
					assert.Equal(t, 1, nodesReadBack(e, "w"), "Nodes at the end")
					assert.Equal(t, 1, live, "servers live at the end")
				}
				assert.LessOrEqual(t, longest, c.boot, "a job waited")
			})
		})
	}
}
