package shim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Against a real OpenSSH sshd (ed25519 host key): the key pinned for it
// (PinnedKey, or a known_hosts line) is an ECDSA key, i.e. the host's key
// changed, and changed type. The doc: a changed key is a
// *HostKeyMismatchError at StageHostKey, never retried (offering only
// ecdsa-sha2-nistp256 made the key exchange fail instead: "no common
// algorithm for host key", StageHandshake, retried until ctx ends).
func TestSSHDChangedKeyTypeIsMismatch(t *testing.T) {
	clientKey := testSigner(t, "client")
	d := startSSHD(t, clientKey.PublicKey())
	seed := sha256.Sum256([]byte("ecdsa pin"))
	ek, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), seed[:])
	require.NoError(t, err)
	ecdsaPub, err := ssh.NewPublicKey(&ek.PublicKey)
	require.NoError(t, err)
	host, portStr, _ := net.SplitHostPort(d.addr)
	port, _ := strconv.Atoi(portStr)
	inst := fleet.Instance{ID: "i-real", SSH: fleet.SSHEndpoint{User: currentUser(t), Host: host, Port: port}}

	kh := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(kh, []byte(knownhosts.Line([]string{d.addr}, ecdsaPub)+"\n"), 0o600))
	khPolicy, err := KnownHosts(kh)
	require.NoError(t, err)

	// sshd may not listen yet: wait with its real key.
	s0, err := New(DstackShim(shimVersion), []ssh.Signer{clientKey}, PinnedKey(d.hostKey), WithLogger(testLogger(t)),
		WithBackoff(50*time.Millisecond, 200*time.Millisecond))
	require.NoError(t, err)
	ctx0, cancel0 := context.WithTimeout(context.Background(), 30*time.Second)
	c, err := s0.Connect(ctx0, inst)
	cancel0()
	require.NoError(t, err)
	require.NoError(t, c.Close())

	for name, p := range map[string]HostKeyPolicy{"PinnedKey": PinnedKey(ecdsaPub), "KnownHosts": khPolicy} {
		t.Run(name, func(t *testing.T) {
			s, err := New(DstackShim(shimVersion), []ssh.Signer{clientKey}, p, WithLogger(testLogger(t)),
				WithBackoff(50*time.Millisecond, 200*time.Millisecond))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err = s.Start(ctx, inst)
			require.Error(t, err)
			var mm *HostKeyMismatchError
			assert.ErrorAs(t, err, &mm, "err: %v", err)
			assert.Equal(t, StageHostKey, StageOf(err))
			var ce *ConnectError
			if assert.ErrorAs(t, err, &ce) {
				assert.Equal(t, 1, ce.Attempts, "never retried")
				assert.Nil(t, ce.Ctx, "refused before the deadline")
			}
		})
	}
}
