package fleet_test

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Vultr VM fleet of one node with the real shim as its agent. The
// node's agent (dstack-shim) crashes; the next agent check fails and the
// Manager starts the agent again, which works ("check 1 failed; the agent
// was started again": Start verifies the agent's health through the same
// forwarded path). The node can run a job at once.
// Now: Acquire hands the node out once its agent is started again
// (its health was just verified), or at least the restart counts as a
// passed check.
// Before (tester AO): Acquire answers ErrNoIdle until the next agent check passes,
// Policy.AgentCheckInterval later (5m10s measured): a job made to wait 5 minutes
// though the node is healthy and idle — and an orchestrator doing what
// the README says on ErrNoIdle ("grow the fleet with Apply") buys a second
// machine (a Vultr hour here; 480 prepaid minutes, 216.96 USD, on Hot
// Aisle bare metal) (runnable: AgentCheckFails is reset only by a passed
// check, not by the restart that follows a failed one: agentChecked2).
func TestAcquireHandsOutANodeWhoseAgentWasStartedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		w.apply("f", 1, vultrVM("ewr"))
		inst := w.idle("f")
		host := w.net.Host(net.JoinHostPort(inst.SSH.Host, strconv.Itoa(inst.SSH.Port)))
		require.NotNil(t, host, "the node's SSH host %s:%d", inst.SSH.Host, inst.SSH.Port)
		require.True(t, host.AgentRunning())
		require.True(t, host.KillAgent())
		restarted := func() bool {
			for _, ev := range w.eventsOf(fleet.EventAgentUnhealthy) {
				if ev.InstanceID == inst.ID && strings.Contains(ev.Message, "started again") && !strings.Contains(ev.Message, "failed too") {
					return true
				}
			}
			return false
		}
		require.True(t, w.runUntil(time.Hour, restarted), "the agent was started again: %v", w.eventsOf(fleet.EventAgentUnhealthy))
		require.True(t, host.AgentRunning(), "the agent runs again")
		at := time.Now()
		var waited time.Duration
		for {
			_, err := w.m.Acquire(t.Context(), "f")
			if !errors.Is(err, fleet.ErrNoIdle) {
				require.NoError(t, err)
				break
			}
			require.Less(t, waited, time.Hour)
			require.NoError(t, w.m.Reconcile(t.Context()))
			time.Sleep(10 * time.Second)
			waited = time.Since(at)
		}
		t.Logf("Acquire handed the node out %s after its agent was started again", waited)
		assert.Less(t, waited, time.Minute, "a node whose agent was just started again (and its health verified) waits for the next check")
	})
}
