package shim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// A host whose pinned key is ed25519 now presents only an ECDSA key (a
// different machine, or a reinstall with another key type, within one
// rental): the doc says a changed key is refused with a
// *HostKeyMismatchError at StageHostKey and never retried. The policy
// offers the pinned key's algorithm first but also the others, so the key
// exchange completes and the callback refuses the ECDSA key (it used to
// fail with "no common algorithm for host key", retried as a handshake
// error until the deadline).
func TestHostKeyTypeChangeIsMismatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy func(pinned ssh.PublicKey, inst fleet.Instance) HostKeyPolicy
	}{
		{"PinnedKey", func(k ssh.PublicKey, _ fleet.Instance) HostKeyPolicy { return PinnedKey(k) }},
		{"TrustOnFirstUse", func(k ssh.PublicKey, inst fleet.Instance) HostKeyPolicy {
			st := NewMemoryHostKeyStore()
			_, _ = st.PinHostKey(HostIdentity(inst), k)
			return TrustOnFirstUse(st)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
				require.NoError(t, err)
				hostKey, err := ssh.NewSignerFromKey(ek)
				require.NoError(t, err)
				cfg := &ssh.ServerConfig{PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil }}
				cfg.AddHostKey(hostKey)
				srv := &silentHost{cfg: cfg}
				defer srv.close()

				inst := fleet.Instance{ID: "vm-q1", RequestID: "r1", SSH: fleet.SSHEndpoint{Host: "203.0.113.60", Port: 22, User: "root"}}
				pinned := testSigner(t, "the machine's first host key").PublicKey() // ed25519
				s, err := New(DstackShim(shimVersion), []ssh.Signer{clientKey(t)}, tc.policy(pinned, inst),
					WithDial(srv.dial), WithLogger(testLogger(t)))
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				t0 := time.Now()
				err = s.Start(ctx, inst)
				took := time.Since(t0)
				require.Error(t, err)
				var hm *HostKeyMismatchError
				assert.ErrorAs(t, err, &hm, "err: %v", err)
				assert.Equal(t, StageHostKey, StageOf(err))
				var ce *ConnectError
				if assert.ErrorAs(t, err, &ce) {
					assert.Equal(t, 1, ce.Attempts, "a host key refusal is never retried")
				}
				assert.Less(t, took, time.Second, "refused at once")
			})
		})
	}
}
