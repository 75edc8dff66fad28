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

// A Hot Aisle bare-metal node (reached through its ssh_access jump host)
// is idle; the jump host then refuses connections for an hour. The agent
// checks fail with fleet.ErrAgentPathDown ("the agent cannot be reached: a
// host on the way (a jump host) is down"), which rightly does not count
// against the machine (it is not released). Acquire's doc: "Only a node
// that can run a job now is handed out: ... with an Agent, its last agent
// check passed" (a node whose check failed for any other reason is not
// handed out: TestAcquireSkipsANodeWhoseAgentCheckFailed).
// Now: while its last agent check failed, Acquire answers ErrNoIdle; once
// the jump host is back, the node is handed out within minutes (tester AR
// measured 20 s).
// Before (tester AO): Acquire hands the node out 40 minutes into the outage, after two
// failed checks (each ends with a restart attempt retried for the agent
// timeout): the orchestrator, reaching the node through the same jump
// host, cannot start the job (agentChecked2 returns on ErrAgentPathDown
// without marking the node, and runnable only looks at AgentCheckFails).
func TestAcquireSkipsANodeWhoseAgentPathIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		w.apply("f", 1, hotType("bm-mi300x-8"))
		inst := w.idle("f")
		require.NotNil(t, inst.SSH.Jump)
		jump := w.net.Host(inst.SSH.Jump.Addr())
		require.NotNil(t, jump)
		back := time.Now().Add(time.Hour)
		jump.SetSchedule(sim.HostSchedule{RefuseUntil: back})
		w.run(40 * time.Minute)
		var down []fleet.Event
		for _, ev := range w.eventsOf(fleet.EventAgentUnhealthy) {
			if ev.InstanceID == inst.ID {
				down = append(down, ev)
			}
		}
		require.NotEmpty(t, down, "agent checks failed while the jump host was down")
		t.Logf("agent checks failed: %d, last: %s", len(down), down[len(down)-1].Message)
		got, err := w.m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out %s, whose last agent check failed", got.ID)
		w.run(time.Until(back)) // the jump host is back: the next check passes, within one AgentCheckInterval
		assert.True(t, w.runUntil(5*time.Minute, func() bool {
			got, err = w.m.Acquire(t.Context(), "f")
			return err == nil && got.ID == inst.ID
		}), "not handed out again within 5 minutes of its jump host's return (a reserve of another server prepays 8 h)")
		w.teardown("f")
	})
}
