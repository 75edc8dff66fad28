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
	"golang.org/x/crypto/ssh"
)

// A fleet's own private key (fleet.Spec.PrivateKey) reaches the host through
// WithKey; the configured key alone is refused there.
func TestWithKeyLogsInWithTheFleetKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		fleetKey := testKey("fleet-specific")
		fleetSigner := testSigner(t, "fleet-specific")
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.20:22", InstanceID: "vm-k",
			AuthorizedKeys: func() []ssh.PublicKey { return []ssh.PublicKey{fleetSigner.PublicKey()} }})
		s := simStarter(t, n, PinnedKey(h.PublicKey()))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err := s.Start(ctx, instOf(t, h))
		assert.Equal(t, StageAuth, StageOf(err), "the configured key is not authorised")

		keyed := s.WithKey(fleet.NewPrivateKey(fleetKey))
		require.NoError(t, keyed.Start(context.Background(), instOf(t, h)))
		assert.True(t, h.AgentRunning())
		assert.Same(t, s, s.WithKey(fleet.PrivateKey{}), "no key: the same starter")
	})
}
