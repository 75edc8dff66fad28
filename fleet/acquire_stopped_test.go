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

// Acquire hands out idle nodes for jobs. A node powered off out of band
// whose power-on (OnStoppedRestart) the provider keeps refusing for now is
// listed Stopped and waits for its next check: it cannot run a job, yet
// Acquire hands it out as the fleet's best idle node.
func TestAcquireSkipsAStoppedNode(t *testing.T) {
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

// With an Agent, a node whose last agent check failed (not yet released:
// fewer than Policy.AgentCheckFailures in a row) is not handed out; once a
// check passes again it is.
func TestAcquireSkipsANodeWhoseAgentCheckFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDrift(t, "vultr", fleet.Policy{AgentCheckFailures: 3})
		in := d.ready()
		d.agent.set(in.ID, true)
		require.True(t, d.runUntil(30*time.Minute, func() bool { return len(d.eventsOf(fleet.EventAgentUnhealthy)) > 0 }))
		require.Equal(t, fleet.StatusIdle, d.only("f").Status)
		got, err := d.m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out %s, whose agent failed its last check", got.ID)
		d.agent.set(in.ID, false)
		d.run(10 * time.Minute) // the next check passes
		got, err = d.m.Acquire(t.Context(), "f")
		require.NoError(t, err, "the agent is healthy again")
		assert.Equal(t, in.ID, got.ID)
	})
}
