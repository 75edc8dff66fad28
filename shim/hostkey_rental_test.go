package shim

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rentServer puts a Hot Aisle-like server named enc1-gpu012 on n (a new
// rental: reinstalled gen times since its first) and returns its host.
func rentServer(t *testing.T, n *sim.Network, gen int) *sim.Host {
	t.Helper()
	n.RemoveHost("10.20.4.12:22")
	return addSimHost(t, n, sim.HostConfig{Addr: "10.20.4.12:22", InstanceID: "enc1-gpu012", KeyGeneration: gen})
}

// startCtx is a fresh hour-long deadline for one Start.
func startCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	t.Cleanup(cancel)
	return ctx
}

// Hot Aisle instance ids are server and VM names from a pool: a bare-metal
// server released ("DELETE … → pool") and reserved again is the same name,
// reinstalled, with a new SSH host key. The Starter, wired as the README
// wires it (TrustOnFirstUse over one MemoryHostKeyStore for the Manager's
// life), pins per rental: the new rental (another RequestID, a later
// Created) is a new identity and its agent starts.
func TestReRentedServerWithSameNameGetsItsAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := rentServer(t, n, 0)
		store := NewMemoryHostKeyStore()
		s := simStarter(t, n, TrustOnFirstUse(store))
		first := instOf(t, h)
		first.RequestID, first.Created = "0123456789ab", time.Now()
		require.NoError(t, s.Start(startCtx(t), first))

		time.Sleep(9 * time.Hour) // released, then reserved again: the same server, reinstalled
		h2 := rentServer(t, n, 1)
		require.NotEqual(t, h.PublicKey().Marshal(), h2.PublicKey().Marshal())
		second := instOf(t, h2)
		second.RequestID, second.Created = "ba9876543210", time.Now()
		require.NoError(t, s.Start(startCtx(t), second), "a new rental of the same server name is a new machine identity")
		assert.True(t, h2.AgentRunning())
		k1, _ := store.HostKey("enc1-gpu012#0123456789ab")
		k2, _ := store.HostKey("enc1-gpu012#ba9876543210")
		assert.True(t, keysEqual(k1, h.PublicKey()))
		assert.True(t, keysEqual(k2, h2.PublicKey()))
	})
}

// Within one rental (the same request id, or without one the same creation
// time) a changed host key is still an impostor: refused at once, nothing
// run, the pin kept.
func TestHostKeyChangeWithinOneRentalIsRefused(t *testing.T) {
	created := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		inst func(fleet.Instance) fleet.Instance
		id   string
	}{
		{"request id", func(i fleet.Instance) fleet.Instance { i.RequestID = "0123456789ab"; return i },
			"enc1-gpu012#0123456789ab"},
		{"creation time only", func(i fleet.Instance) fleet.Instance { i.Created = created; return i },
			"enc1-gpu012@2025-03-01T12:00:00Z"},
		{"instance id only", func(i fleet.Instance) fleet.Instance { return i }, "enc1-gpu012"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := sim.NewNetwork(nil, 1)
				defer n.Close()
				h := rentServer(t, n, 0)
				store := NewMemoryHostKeyStore()
				s := simStarter(t, n, TrustOnFirstUse(store))
				inst := c.inst(instOf(t, h))
				require.NoError(t, s.Start(startCtx(t), inst))
				old := h.PublicKey()

				ran := len(h.Commands())
				h.RotateHostKey()
				h.KillAgent()
				var mm *HostKeyMismatchError
				require.ErrorAs(t, s.Start(startCtx(t), inst), &mm)
				assert.Equal(t, c.id, mm.ID)
				assert.Equal(t, []string{Fingerprint(old)}, mm.Want)
				assert.Len(t, h.Commands(), ran, "nothing ran on the impostor")
				pinned, _ := store.HostKey(c.id)
				assert.True(t, keysEqual(pinned, old), "the pin is kept")
			})
		})
	}
}

// A rental known only by its creation time: a later creation time under
// the same id is another rental, pinned anew.
func TestReRentedServerKnownByCreationTimeGetsItsAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		s := simStarter(t, n, TrustOnFirstUse(NewMemoryHostKeyStore()))
		first := instOf(t, rentServer(t, n, 0))
		first.Created = time.Now()
		require.NoError(t, s.Start(startCtx(t), first))
		time.Sleep(9 * time.Hour)
		second := instOf(t, rentServer(t, n, 1))
		second.Created = time.Now()
		require.NoError(t, s.Start(startCtx(t), second))
	})
}

func TestHostIdentity(t *testing.T) {
	at := time.Date(2025, 3, 1, 13, 0, 0, 5, time.FixedZone("CET", 3600))
	assert.Equal(t, "vm-1", HostIdentity(fleet.Instance{ID: "vm-1"}))
	assert.Equal(t, "vm-1#0123456789ab", HostIdentity(fleet.Instance{ID: "vm-1", RequestID: "0123456789ab", Created: at}),
		"the request id names the rental")
	assert.Equal(t, "vm-1@2025-03-01T12:00:00.000000005Z", HostIdentity(fleet.Instance{ID: "vm-1", Created: at}),
		"the creation time, in UTC")
	assert.Equal(t, HostIdentity(fleet.Instance{ID: "vm-1", Created: at}),
		HostIdentity(fleet.Instance{ID: "vm-1", Created: at.UTC()}), "the same instant in any zone")
}

// ForgetInstance drops the pin of the instance's rental, keeps the jump
// host's (it serves every server) and other rentals', and does nothing for
// policies that keep no pins.
func TestForgetInstanceDropsItsRentalsPin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		addSimHost(t, n, sim.HostConfig{Addr: "198.51.100.7:22", InstanceID: "ssh-access", User: "hotaisle", Jump: true})
		h := addSimHost(t, n, sim.HostConfig{Addr: "10.20.4.12:22", InstanceID: "enc1-gpu012", User: "hotaisle", Private: true})
		store := NewMemoryHostKeyStore()
		s := simStarter(t, n, TrustOnFirstUse(store))
		inst := instOf(t, h)
		inst.RequestID = "0123456789ab"
		inst.SSH.Jump = &fleet.SSHEndpoint{User: "hotaisle", Host: "198.51.100.7", Port: 22}
		require.NoError(t, s.Start(startCtx(t), inst))
		_, err := store.PinHostKey("enc1-gpu012#ba9876543210", h.PublicKey())
		require.NoError(t, err)

		require.NoError(t, s.ForgetInstance(t.Context(), inst))
		k, _ := store.HostKey(HostIdentity(inst))
		assert.Nil(t, k, "forgotten")
		k, _ = store.HostKey("jump:198.51.100.7:22")
		assert.NotNil(t, k, "the jump host's pin is kept")
		k, _ = store.HostKey("enc1-gpu012#ba9876543210")
		assert.NotNil(t, k, "another rental's pin is kept")

		require.NoError(t, simStarter(t, n, PinnedKey(h.PublicKey())).ForgetInstance(t.Context(), inst))
		require.NoError(t, simStarter(t, n, TrustOnFirstUse(pinsOnly{store})).ForgetInstance(t.Context(), inst))
	})
}

// pinsOnly is a HostKeyStore that cannot forget.
type pinsOnly struct{ HostKeyStore }
