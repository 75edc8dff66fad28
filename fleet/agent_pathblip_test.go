package fleet_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Hot Aisle bare-metal node (reached through its ssh_access jump host),
// idle, the real shim as the agent; the jump host refuses connections for
// 40 minutes. Once it is back the node is handed out again within less
// than one Policy.AgentCheckInterval (a reserve of another bare-metal
// server on ErrNoIdle would prepay 8 hours, $216.96).
// Holds on main: handed out 20 s after the jump host was back (the agent
// checks that met the outage said "not judged by it" at -20m, -5m, +10s).
// The existing test (TestAcquireSkipsANodeWhoseAgentPathIsDown) only
// waits 30 minutes for it.
func TestNodeHandedOutSoonAfterItsJumpHostIsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		w.apply("f", 1, hotType("bm-mi300x-8"))
		inst := w.idle("f")
		require.NotNil(t, inst.SSH.Jump)
		jump := w.net.Host(inst.SSH.Jump.Addr())
		require.NotNil(t, jump)
		back := time.Now().Add(40 * time.Minute)
		jump.SetSchedule(sim.HostSchedule{RefuseUntil: back})
		w.run(time.Until(back))
		var handed time.Duration = -1
		w.runUntil(30*time.Minute, func() bool {
			_, err := w.m.Acquire(t.Context(), "f")
			if errors.Is(err, fleet.ErrNoIdle) {
				return false
			}
			require.NoError(t, err)
			handed = time.Since(back)
			return true
		})
		for _, ev := range w.eventsOf(fleet.EventAgentUnhealthy) {
			t.Logf("%v %s %s", ev.Time.Sub(back).Round(time.Second), ev.Message, ev.Err)
		}
		t.Logf("handed out %v after the jump host was back", handed.Round(time.Second))
		require.NotEqual(t, time.Duration(-1), handed, "never handed out")
		assert.Less(t, handed, 5*time.Minute, "a node that can run a job, not handed out after its jump host came back")
	})
}
