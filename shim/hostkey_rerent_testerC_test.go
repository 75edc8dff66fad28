package shim

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/require"
)

// Hot Aisle instance ids are server and VM names from a pool: a bare-metal
// server released ("DELETE … → pool") and reserved again is the same name,
// reinstalled, with a new SSH host key. The Starter, wired as the README
// wires it (TrustOnFirstUse over one MemoryHostKeyStore for the Manager's
// life), pins by instance id only and nothing forgets a pin when the
// instance is terminated (MemoryHostKeyStore.Forget exists; no caller, and
// fleet.Agent has no way to say so). So the new rental of enc1-gpu012 is
// refused as an impostor (HostKeyMismatchError, never retried): its agent
// never starts, the Manager replaces it after paying its 8-hour minimum, and
// with one server in the pool gets the same one again. Expected: a new
// rental (another RequestID, a later Created) is a new identity and its
// agent starts.
func TestTesterCReRentedServerWithSameNameGetsItsAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "10.20.4.12:22", InstanceID: "enc1-gpu012"})
		s := simStarter(t, n, TrustOnFirstUse(NewMemoryHostKeyStore()))
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		first := instOf(t, h)
		first.RequestID, first.Created = "0123456789ab", time.Now()
		require.NoError(t, s.Start(ctx, first))

		// Released, then reserved again (hours later): the same server,
		// reinstalled.
		time.Sleep(9 * time.Hour)
		n.RemoveHost(h.Addr())
		h2 := addSimHost(t, n, sim.HostConfig{Addr: "10.20.4.12:22", InstanceID: "enc1-gpu012"})
		h2.RotateHostKey()
		second := instOf(t, h2)
		second.RequestID, second.Created = "ba9876543210", time.Now()
		ctx2, cancel2 := context.WithTimeout(context.Background(), time.Hour)
		defer cancel2()
		require.NoError(t, s.Start(ctx2, second), "a new rental of the same server name is a new machine identity")
	})
}
