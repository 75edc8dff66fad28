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

// Acquire marks the node busy "at once (no other Acquire gets it)". A
// process that Acquires a node and then shuts its Manager down (Close; the
// Store keeps everything) and starts a new Manager on the same Store must
// find that node busy: the job runs on it. Got: the busy mark is dropped
// by Close (it was only queued), the new Manager shows the node idle and
// Acquire hands it out a second time.
func TestTesterKAcquireThenCloseKeepsTheBusyMark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.idleFleet("f", 1, 10*time.Minute, vultrType("vcg-a100-12c-120g-80vram"))
		got, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		e.m.Close()
		e.m = e.manager(e.store)
		require.NoError(t, e.m.Reconcile(t.Context()))
		in := e.only("f")
		assert.Equal(t, fleet.StatusBusy, in.Status, "the node Acquire handed out before Close")
		again, err := e.m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out %s twice (first %s)", again.ID, got.ID)
	})
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

// Acquire hands out idle nodes for jobs. A node powered off out of band
// whose power-on (OnStoppedRestart) the provider keeps refusing for now is
// listed Stopped and waits for its next check: it cannot run a job, yet
// Acquire hands it out as the fleet's best idle node.
func TestTesterKAcquireSkipsAStoppedNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OnStopped: fleet.OnStoppedRestart})
		in := e.idleFleet("f", 1, 10*time.Minute, vultrType("vcg-a100-12c-120g-80vram"))[0]
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "POST /v2/instances/{id}/start", Status: 503, Duration: 10 * time.Hour}))
		require.NoError(t, e.vultr.HaltOutOfBand(in.ID))
		require.True(t, e.runUntil(30*time.Minute, func() bool { return len(e.eventsOf(fleet.EventInstanceStopped)) > 0 }))
		e.run(time.Minute)
		cur := e.only("f")
		t.Logf("status %s stopped %v; events %v", cur.Status, cur.Stopped, e.eventsOf(fleet.EventInstanceStopped))
		got, err := e.m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out %s (stopped=%v), powered off", got.ID, got.Stopped)
	})
}

// The same on the sims with Run going: a job ends on the fleet's only node
// 10 minutes into its 30-minute minimum; the orchestrator gives it back
// with MarkIdle and asks Acquire for its next job at once, growing the
// fleet by one node when Acquire answers ErrNoIdle ("no idle instance").
// Expected: the node just given back runs the job, one machine billed 30
// minutes. Got: a second machine bought and billed its minimum.
func TestTesterKMarkIdleThenAcquireBuysNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.idleFleet("f", 1, time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		x, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		time.Sleep(10 * time.Minute)
		require.NoError(t, e.m.MarkIdle(x.ID))
		next, err := e.m.Acquire(t.Context(), "f")
		if err != nil {
			require.ErrorIs(t, err, fleet.ErrNoIdle)
			s := e.m.Fleets()[0]
			s.Nodes++
			require.NoError(t, e.m.Apply(t.Context(), s))
			for ; err != nil; next, err = e.m.Acquire(t.Context(), "f") {
				time.Sleep(10 * time.Second)
			}
		}
		time.Sleep(5 * time.Minute)
		require.NoError(t, e.m.MarkIdle(next.ID))
		time.Sleep(3 * time.Hour)
		stop()
		var total time.Duration
		for _, c := range servers(e.hot.Ledger().Charges) {
			total += c.Billed
		}
		assert.Len(t, servers(e.hot.Ledger().Charges), 1, "machines bought (the job got %s; the first job ran on %s)", next.ID, x.ID)
		assert.Equal(t, 30*time.Minute, total, "billed")
	})
}
