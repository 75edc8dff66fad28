package fleet_test

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hot Aisle bare metal (8 hours prepaid) whose shared ssh_access jump host
// is down (refusing TCP) for 30 minutes from when the agent start first
// tries it. A jump host down is not the machine's fault: agent checks wrap
// it as fleet.ErrAgentPathDown and "the instance is not judged by it"
// (TestJumpHostDownDoesNotBuyAnotherBareMetal), and a provisioning
// deadline inside a prepaid minimum is deferred because "releasing it
// earlier saves nothing". The agent start had neither: at the agent
// deadline (15 min) the prepaid machine was force-released and the fleet
// stalled, although the jump host is back 15 minutes later. Now the agent
// deadline inside a prepaid minimum is deferred too, and a start failing
// with ErrAgentPathDown does not count against the machine.
func TestJumpHostDownDuringFirstAgentStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		var mu sync.Mutex
		var jumpDownAt time.Time
		w.net.OnAddHost(func(h *sim.Host) {
			if strings.HasSuffix(h.Addr(), ":22") { // the private server
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if jumpDownAt.IsZero() {
				jumpDownAt = time.Now()
				h.SetSchedule(sim.HostSchedule{RefuseUntil: jumpDownAt.Add(30 * time.Minute)})
			}
		})
		w.apply("f", 1, hotType("bm-mi300x-8"))
		ok := w.runUntil(2*time.Hour, func() bool {
			i := w.m.Instances("f")
			return len(i) > 0 && i[0].Status == fleet.StatusIdle
		})
		mu.Lock()
		down := jumpDownAt
		mu.Unlock()
		require.False(t, down.IsZero(), "the jump host was reached")
		assert.True(t, ok, "the machine serves the fleet once its jump host is back; agent failures: %v", w.eventsOf(fleet.EventAgentFailed))
		assert.Zero(t, w.count(fleet.EventReleaseForced), "forced release inside the 8-hour minimum: %v", w.eventsOf(fleet.EventReleaseForced))
		assert.Zero(t, w.count(fleet.EventFleetStalled), "fleet stalled: %v", w.eventsOf(fleet.EventFleetStalled))
		w.teardown("f")
	})
}
