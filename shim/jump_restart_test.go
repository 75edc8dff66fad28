package shim

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hot Aisle bare metal behind ssh_access: the private host still refuses
// TCP (booting) for 60 s; at +10 s the jump host restarts (its connections
// drop; it answers again at once, same key). A Start with a 5-minute
// deadline should reconnect through the jump host and start the agent at
// about +60 s: the retries notice the dead jump connection and reopen it.
func TestJumpHostRestartDuringInnerRetries(t *testing.T) {
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

// The jump host goes away for good while the private host behind it is
// still booting: the retries reopen the jump connection, fail, and the
// error is the jump path's (Jump, the jump host's address, answering
// fleet.ErrAgentPathDown), not a failure of the private host.
func TestJumpHostGoneDuringInnerRetriesIsJumpPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		t0 := time.Now()
		addSimHost(t, n, sim.HostConfig{Addr: "198.51.100.7:22", InstanceID: "ssh-access", User: "hotaisle", Jump: true})
		h := addSimHost(t, n, sim.HostConfig{Addr: "10.20.0.5:22", InstanceID: "bm-1", User: "hotaisle", Private: true,
			Schedule: sim.HostSchedule{RefuseUntil: t0.Add(time.Hour)}})
		s := simStarter(t, n, TrustOnFirstUse(NewMemoryHostKeyStore()))
		inst := instOf(t, h)
		inst.SSH.Jump = &fleet.SSHEndpoint{User: "hotaisle", Host: "198.51.100.7", Port: 22}

		go func() {
			time.Sleep(10 * time.Second)
			n.RemoveHost("198.51.100.7:22")
		}()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := s.Start(ctx, inst)
		require.Error(t, err)
		var ce *ConnectError
		require.ErrorAs(t, err, &ce)
		assert.True(t, ce.Jump, "err: %v", err)
		assert.Equal(t, "198.51.100.7:22", ce.Addr)
		assert.Equal(t, StageDial, ce.Stage)
		assert.True(t, errors.Is(err, fleet.ErrAgentPathDown), "err: %v", err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}
