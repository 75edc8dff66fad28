package shim

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// TOFU pins the first key to the instance id; a different key for that id
// later is a mismatch, refused at once, never retried, nothing run.
func TestHostKeyMismatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.40:22", InstanceID: "vm-40"})
		store := NewMemoryHostKeyStore()
		s := simStarter(t, n, TrustOnFirstUse(store))
		inst := instOf(t, h)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, s.Start(ctx, inst))
		old := h.PublicKey()
		pinned, _ := store.HostKey("vm-40")
		require.True(t, keysEqual(pinned, old))

		// The machine at the address now presents another key (reinstalled,
		// or another tenant's): never the same host.
		ran := len(h.Commands())
		newKey := h.RotateHostKey()
		h.KillAgent()
		t0 := time.Now()
		err := s.Start(ctx, inst)
		assert.Zero(t, time.Since(t0), "not retried")
		var mm *HostKeyMismatchError
		require.ErrorAs(t, err, &mm)
		assert.Equal(t, "vm-40", mm.ID)
		assert.Equal(t, Fingerprint(newKey), mm.Got)
		assert.Equal(t, []string{Fingerprint(old)}, mm.Want)
		var ce *ConnectError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, StageHostKey, ce.Stage)
		assert.Equal(t, 1, ce.Attempts)
		assert.Len(t, h.Commands(), ran, "nothing ran on the impostor")
		pinned, _ = store.HostKey("vm-40")
		assert.True(t, keysEqual(pinned, old), "the pin is kept")

		// A new instance reusing the address has its own identity and pin.
		h2 := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.40:22", InstanceID: "vm-41"})
		require.NoError(t, s.Start(ctx, instOf(t, h2)))
		pinned2, _ := store.HostKey("vm-41")
		assert.True(t, keysEqual(pinned2, h2.PublicKey()))
		assert.False(t, keysEqual(pinned2, old))
	})
}

func TestPinnedKeyMismatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.41:22", InstanceID: "vm-42"})
		other := testSigner(t, "not the host").PublicKey()
		s := simStarter(t, n, PinnedKey(other))
		err := s.Start(context.Background(), instOf(t, h))
		var mm *HostKeyMismatchError
		require.ErrorAs(t, err, &mm)
		assert.Equal(t, Fingerprint(h.PublicKey()), mm.Got)
		assert.Equal(t, []string{Fingerprint(other)}, mm.Want)
		assert.Empty(t, h.Commands())
		assert.Zero(t, h.AgentStarts())
	})
}

func TestKnownHostsPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.42:2222", InstanceID: "vm-43"})
		unknown := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.43:22", InstanceID: "vm-44"})
		other := testSigner(t, "old key").PublicKey()
		kh := filepath.Join(t.TempDir(), "known_hosts")
		lines := knownhosts.Line([]string{h.Addr()}, h.PublicKey()) + "\n" +
			knownhosts.Line([]string{"203.0.113.44:22"}, other) + "\n"
		require.NoError(t, os.WriteFile(kh, []byte(lines), 0o600))
		p, err := KnownHosts(kh)
		require.NoError(t, err)
		ctx := context.Background()
		require.NoError(t, simStarter(t, n, p).Start(ctx, instOf(t, h)))

		var uh *UnknownHostError
		require.ErrorAs(t, simStarter(t, n, p).Check(ctx, instOf(t, unknown)), &uh)

		moved := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.44:22", InstanceID: "vm-45"})
		var mm *HostKeyMismatchError
		require.ErrorAs(t, simStarter(t, n, p).Start(ctx, instOf(t, moved)), &mm)
		assert.Equal(t, "203.0.113.44", mm.ID)

		_, err = KnownHosts(filepath.Join(t.TempDir(), "missing"))
		require.Error(t, err)
	})
}

func TestPolicyAlgorithms(t *testing.T) {
	ed := testSigner(t, "x").PublicKey()
	v, err := PinnedKey(ed).Verifier("i", "192.0.2.1:22")
	require.NoError(t, err)
	require.NotEmpty(t, v.Algorithms)
	assert.Equal(t, ssh.KeyAlgoED25519, v.Algorithms[0], "the pinned key's type first")
	assert.Contains(t, v.Algorithms, ssh.KeyAlgoECDSA256, "then the others: a changed type reaches the callback")
	assert.NotContains(t, v.Algorithms, ssh.CertAlgoED25519v01)
	require.NoError(t, v.Callback("192.0.2.1:22", &net.TCPAddr{}, ed))

	store := NewMemoryHostKeyStore()
	v, err = TrustOnFirstUse(store).Verifier("i", "192.0.2.1:22")
	require.NoError(t, err)
	assert.Nil(t, v.Algorithms, "first use: any type")
	require.NoError(t, v.Callback("192.0.2.1:22", &net.TCPAddr{}, ed))
	v, err = TrustOnFirstUse(store).Verifier("i", "192.0.2.1:22")
	require.NoError(t, err)
	require.NotEmpty(t, v.Algorithms)
	assert.Equal(t, ssh.KeyAlgoED25519, v.Algorithms[0], "afterwards: the pinned key's type first")

	_, err = TrustOnFirstUse(store).Verifier("", "192.0.2.1:22")
	require.Error(t, err)
	_, err = PinnedKey().Verifier("i", "a:22")
	require.Error(t, err)
	store.Forget("i")
	k, _ := store.HostKey("i")
	assert.Nil(t, k)
}

func TestNewRequiresPolicyAndSigners(t *testing.T) {
	key := testSigner(t, "k")
	_, err := New(DstackShim(shimVersion), []ssh.Signer{key}, nil)
	require.Error(t, err, "no default that ignores host keys")
	_, err = New(DstackShim(shimVersion), nil, InsecureIgnoreHostKey())
	require.Error(t, err)
	bad := DstackShim(shimVersion)
	bad.Env = map[string]string{"X": "it's"}
	_, err = New(bad, []ssh.Signer{key}, InsecureIgnoreHostKey())
	require.Error(t, err)
	s, err := New(DstackShim(shimVersion), []ssh.Signer{key}, InsecureIgnoreHostKey())
	require.NoError(t, err)
	assert.Equal(t, 10998, s.Spec().HealthPort)
}
