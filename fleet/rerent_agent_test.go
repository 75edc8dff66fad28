package fleet_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/shim"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// With the shim as its agent (trust on first use over one store for the
// Manager's life), a Hot Aisle bare-metal server released and reserved
// again by the same fleet (the same name, reinstalled, a new host key) gets
// its agent like any new server, and the first rental's pin is forgotten
// once its release is confirmed.
func TestARerentedServerGetsItsAgentAndTheOldPinIsForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network := sim.NewNetwork(nil, 9)
		defer network.Close()
		e := newEnv(t, fleet.Policy{}, sim.WithNetwork(network))
		seed := sha256.Sum256([]byte("rerent key"))
		key := ed25519.NewKeyFromSeed(seed[:])
		signer, err := ssh.NewSignerFromKey(key)
		require.NoError(t, err)
		store := shim.NewMemoryHostKeyStore()
		starter, err := shim.New(shim.DstackShim("0.19.41"), []ssh.Signer{signer}, shim.TrustOnFirstUse(store),
			shim.WithDial(network.Dial), shim.WithLogger(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: testOwner, Agent: starter})
		require.NoError(t, e.hot.SetQuantity("bm-mi300x-8", 1))
		require.NoError(t, e.m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: 1, Requirements: hotType("bm-mi300x-8"),
			SSHKeys:    []string{strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))},
			PrivateKey: fleet.NewPrivateKey(key)}))
		require.True(t, e.runUntil(time.Hour, func() bool { return e.only("f").Status == fleet.StatusIdle }))
		first := e.only("f")
		firstKey, _ := store.HostKey(shim.HostIdentity(first))
		require.NotNil(t, firstKey)

		_, err = e.m.Release(t.Context(), first.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
		require.NoError(t, err)
		require.True(t, e.runUntil(2*time.Hour, func() bool {
			a := activeOf(e.m.Instances("f"))
			return len(a) == 1 && a[0].RequestID != first.RequestID && a[0].Status == fleet.StatusIdle
		}), "the server rented again is ready: %v", e.eventsOf(fleet.EventAgentFailed))
		second := activeOf(e.m.Instances("f"))[0]
		require.Equal(t, first.ID, second.ID, "the same server, rented again")
		secondKey, _ := store.HostKey(shim.HostIdentity(second))
		require.NotNil(t, secondKey)
		assert.NotEqual(t, firstKey.Marshal(), secondKey.Marshal(), "reinstalled: a new host key")
		gone, _ := store.HostKey(shim.HostIdentity(first))
		assert.Nil(t, gone, "the first rental's pin is forgotten")
		assert.Empty(t, e.eventsOf(fleet.EventAgentFailed))
		assert.Equal(t, 1, calls(e.hot.Calls(), hotBMRelease, 0), "released once")

		require.NoError(t, e.m.Delete(t.Context(), "f", fleet.WithReleasePolicy(fleet.ReleaseNow)))
		require.True(t, e.runUntil(time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		e.assertNothingLeft()
	})
}
