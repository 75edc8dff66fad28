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

// idleFleet applies fleet name (nodes, IdleTimeout idle) on e's Manager and
// reconciles until every node is idle.
func (e *env) idleFleet(name string, nodes int, idle time.Duration, r fleet.Requirements) []fleet.Instance {
	e.t.Helper()
	s := spec(name, nodes, r)
	s.IdleTimeout = idle
	require.NoError(e.t, e.m.Apply(e.t.Context(), s))
	require.True(e.t, e.runUntil(2*time.Hour, func() bool {
		a := activeOf(e.m.Instances(name))
		if len(a) != nodes {
			return false
		}
		for _, in := range a {
			if in.Status != fleet.StatusIdle {
				return false
			}
		}
		return true
	}), "fleet %s not idle", name)
	return activeOf(e.m.Instances(name))
}

// Adopted after an empty-Store restart: Hot Aisle gives no start time, so
// an adopted server's minimum (paid whole at reservation) cannot be known.
// An idle bare-metal server adopted a few minutes after its reservation
// has 8 prepaid hours: releasing it 10 minutes (IdleTimeout) after adoption
// saves nothing (the minimum is charged whole) and a job coming later buys
// another 8 hours. Acceptance 1: "IdleTimeout only applies where releasing
// later costs more". Expected: still live 2 hours later, no forced release.
func TestTesterKAdoptedHotAisleIdleNotForcedInsideItsMinimum(t *testing.T) {
	for _, plan := range []string{"bm-mi300x-8", "vm-mi300x-2"} {
		t.Run(plan, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				e.idleFleet("f", 1, 10*time.Minute, hotType(plan))
				e.m.Close()
				e.m = e.manager(fleet.NewMemoryStore())
				s := spec("f", 1, hotType(plan))
				s.IdleTimeout = 10 * time.Minute
				require.NoError(t, e.m.Apply(t.Context(), s))
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

// servers drops the SSH keys from a ledger.
func servers(cs []sim.Charge) []sim.Charge {
	var out []sim.Charge
	for _, c := range cs {
		if c.Kind != "ssh_key" {
			out = append(out, c)
		}
	}
	return out
}
