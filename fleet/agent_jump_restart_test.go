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
	"golang.org/x/crypto/ssh"
)

// Hot Aisle bare metal (8 hours prepaid, 217 USD) behind its ssh_access
// jump host. When the agent start first reaches the server, its sshd still
// refuses TCP for 3 minutes (booting); 30 s in, the jump host restarts
// (its connections drop, it answers again at once with the same key). The
// agent should be up about 3 minutes after the first attempt, on the same
// machine. The starter kept dialling through the jump connection that
// died for its whole AgentTimeout (15 min), which is also the agent
// deadline, and the machine was force-released ($205.66 of its minimum
// not refunded). Now each Start attempt is bounded to a third of
// AgentTimeout and retried (a new connection), and inside the prepaid
// minimum the agent deadline is deferred.
func TestJumpHostRestartDuringAgentStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		pub, err := ssh.NewPublicKey(w.key.Public())
		require.NoError(t, err)
		var mu sync.Mutex
		var jump *sim.Host
		var firstTouch time.Time
		w.net.OnAddHost(func(h *sim.Host) {
			mu.Lock()
			defer mu.Unlock()
			if !strings.HasSuffix(h.Addr(), ":22") {
				jump = h
				return
			}
			if !firstTouch.IsZero() {
				return
			}
			firstTouch = time.Now()
			h.SetSchedule(sim.HostSchedule{RefuseUntil: firstTouch.Add(3 * time.Minute)})
			j := jump
			go func() {
				time.Sleep(30 * time.Second)
				w.net.AddHost(sim.HostConfig{Addr: j.Addr(), InstanceID: j.InstanceID(), User: j.User(), Jump: true,
					AuthorizedKeys: func() []ssh.PublicKey { return []ssh.PublicKey{pub} }})
			}()
		})
		w.apply("f", 1, hotType("bm-mi300x-8"))
		ok := w.runUntil(time.Hour, func() bool {
			i := w.m.Instances("f")
			return len(i) > 0 && i[0].Status == fleet.StatusIdle
		})
		mu.Lock()
		touched := firstTouch
		mu.Unlock()
		require.False(t, touched.IsZero(), "the server's sshd was reached")
		assert.True(t, ok, "the agent is up within the hour; events: %v", w.eventsOf(fleet.EventAgentFailed))
		assert.Less(t, time.Since(touched), 10*time.Minute, "agent up soon after sshd came up (at +3 min)")
		assert.Zero(t, w.count(fleet.EventDeadlineMissed), "the agent deadline was missed")
		assert.Zero(t, w.count(fleet.EventReleaseForced), "forced release inside the 8-hour minimum: %v", w.eventsOf(fleet.EventReleaseForced))
		w.teardown("f")
	})
}
