package shim

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/require"
)

// Hot Aisle bare metal behind ssh_access: the private host still refuses
// TCP (booting) for 60 s; at +10 s the jump host restarts (its connections
// drop; it answers again at once, same key). A Start with a 5-minute
// deadline should reconnect through the jump host and start the agent at
// about +60 s. The retries keep dialling through the dead jump client.
func TestTesterQJumpHostRestartDuringInnerRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		t0 := time.Now()
		jcfg := sim.HostConfig{Addr: "198.51.100.7:22", InstanceID: "ssh-access", User: "hotaisle", Jump: true}
		addSimHost(t, n, jcfg)
		h := addSimHost(t, n, sim.HostConfig{Addr: "10.20.0.5:22", InstanceID: "bm-1", User: "hotaisle", Private: true,
			Schedule: sim.HostSchedule{RefuseUntil: t0.Add(60 * time.Second)}})
		s := simStarter(t, n, TrustOnFirstUse(NewMemoryHostKeyStore()))
		inst := instOf(t, h)
		inst.SSH.Jump = &fleet.SSHEndpoint{User: "hotaisle", Host: "198.51.100.7", Port: 22}

		go func() {
			time.Sleep(10 * time.Second)
			addSimHost(t, n, jcfg) // the jump host restarts: old connections closed
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		err := s.Start(ctx, inst)
		require.NoError(t, err, "took %v", time.Since(t0))
		require.Less(t, time.Since(t0), 90*time.Second)
	})
}
