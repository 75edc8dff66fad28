package shim

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartHealth(t *testing.T) {
	cases := []struct {
		name    string
		agent   sim.AgentSpec
		ok      bool
		took    time.Duration // exact when !ok
		status  int
		service string
	}{
		{name: "slow to listen", agent: sim.AgentSpec{ReadyAfter: 30 * time.Second}, ok: true},
		{name: "wrong service", agent: sim.AgentSpec{Service: "other-agent"}, took: time.Minute, status: 200, service: "other-agent"},
		{name: "status 500", agent: sim.AgentSpec{HealthStatus: 500}, took: time.Minute, status: 500},
		{name: "never listens", agent: sim.AgentSpec{NeverListens: true}, took: time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := sim.NewNetwork(nil, 1)
				defer n.Close()
				h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.50:22", InstanceID: "vm-50"})
				h.SetAgent(tc.agent)
				s := simStarter(t, n, PinnedKey(h.PublicKey()), WithTimeouts(Timeouts{Health: time.Minute}))
				t0 := time.Now()
				err := s.Start(context.Background(), instOf(t, h))
				if tc.ok {
					require.NoError(t, err)
					assert.GreaterOrEqual(t, time.Since(t0), 30*time.Second)
					assert.Less(t, time.Since(t0), 36*time.Second, "polls with backoff capped at 5 s")
					return
				}
				assert.Equal(t, tc.took, time.Since(t0))
				var he *HealthError
				require.ErrorAs(t, err, &he)
				assert.Equal(t, StageHealth, StageOf(err))
				assert.Equal(t, "vm-50", he.InstanceID)
				assert.Equal(t, "http://localhost:10998/api/healthcheck", he.URL)
				assert.Equal(t, tc.status, he.StatusCode)
				assert.Equal(t, tc.service, he.Service)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.True(t, h.AgentRunning(), "started, just not healthy")
			})
		})
	}
}

// Check connects once: a host that refuses is reported at once.
func TestCheckDoesNotRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.51:22", InstanceID: "vm-51",
			Schedule: sim.HostSchedule{RefuseUntil: time.Now().Add(time.Hour)}})
		s := simStarter(t, n, PinnedKey(h.PublicKey()))
		t0 := time.Now()
		err := s.Check(context.Background(), instOf(t, h))
		assert.Zero(t, time.Since(t0))
		var ce *ConnectError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, StageDial, ce.Stage)
		assert.Equal(t, 1, ce.Attempts)
	})
}

// Connect hands out the forwarded path that health was verified through.
func TestConnectAgentHTTPClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.52:22", InstanceID: "vm-52"})
		s := simStarter(t, n, PinnedKey(h.PublicKey()))
		ctx := context.Background()
		require.NoError(t, s.Start(ctx, instOf(t, h)))
		c, err := s.Connect(ctx, instOf(t, h))
		require.NoError(t, err)
		defer c.Close()
		resp, err := c.AgentHTTPClient().Get("http://localhost:10998/api/healthcheck")
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "localhost:10998", c.AgentAddr())
	})
}
