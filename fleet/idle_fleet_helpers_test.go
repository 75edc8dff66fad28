package fleet_test

import (
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
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
