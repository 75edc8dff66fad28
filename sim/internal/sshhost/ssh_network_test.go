package sshhost

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"
)

// S16: refuse TCP 20 s → close before the banner 10 s → reject the key 15 s
// → accept.
func TestSSHStagedReadiness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		key := testSigner(t, "a")
		start := time.Now()
		h := n.AddHost(HostConfig{Addr: "203.0.113.10:22", User: "root", AuthorizedKeys: authorized(key),
			Schedule: HostSchedule{RefuseUntil: start.Add(20 * time.Second), NoBannerUntil: start.Add(30 * time.Second),
				RejectKeysUntil: start.Add(45 * time.Second)}})
		counts := map[string]int{}
		var c *ssh.Client
		for range 100 {
			var err error
			c, err = dialSSH(context.Background(), n.Dial, h.Addr(), "root", key, h.PublicKey())
			if err == nil {
				break
			}
			switch {
			case errors.Is(err, syscall.ECONNREFUSED):
				var op *net.OpError
				require.ErrorAs(t, err, &op)
				counts["refused"]++
			case errors.Is(err, io.EOF):
				counts["no banner"]++
			case strings.Contains(err.Error(), "unable to authenticate"):
				counts["key rejected"]++
			default:
				t.Fatalf("unexpected error at %v: %v", time.Since(start), err)
			}
			time.Sleep(time.Second)
		}
		require.NotNil(t, c)
		defer c.Close()
		assert.Equal(t, map[string]int{"refused": 20, "no banner": 10, "key rejected": 15}, counts)
		assert.Equal(t, 45*time.Second, time.Since(start))
	})
}

func TestSSHHangingHandshakeCutByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		key := testSigner(t, "a")
		h := n.AddHost(HostConfig{Addr: "203.0.113.11:22", User: "root", AuthorizedKeys: authorized(key),
			Schedule: HostSchedule{HangUntil: time.Now().Add(time.Hour)}})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := dialSSH(ctx, n.Dial, h.Addr(), "root", key, h.PublicKey())
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 5*time.Second, time.Since(start))
		// Conn deadlines work too (a shim may bound the handshake with them).
		conn, err := n.Dial(context.Background(), "tcp", h.Addr())
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(2*time.Second)))
		start = time.Now()
		_, err = conn.Read(make([]byte, 1))
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout())
		assert.Equal(t, 2*time.Second, time.Since(start))
		conn.Close()

		// Once the hang window is over, a new connection works.
		h.SetSchedule(HostSchedule{})
		c := mustDial(t, n, h, key)
		c.Close()
	})
}

func TestNetworkUnreachableAndRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		n.AddHost(HostConfig{Addr: "10.20.4.12:22", User: "hotaisle", Private: true})
		n.AddHost(HostConfig{Addr: "203.0.113.12:22", User: "root"})
		for _, addr := range []string{"192.0.2.99:22", "10.20.4.12:22"} {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			start := time.Now()
			_, err := n.Dial(ctx, "tcp", addr)
			cancel()
			var op *net.OpError
			require.ErrorAs(t, err, &op, addr)
			assert.ErrorIs(t, err, context.DeadlineExceeded, addr)
			assert.True(t, op.Timeout(), addr)
			assert.Equal(t, 3*time.Second, time.Since(start), addr)
		}
		start := time.Now()
		_, err := n.Dial(context.Background(), "tcp", "192.0.2.99:22")
		assert.ErrorIs(t, err, syscall.ETIMEDOUT)
		assert.Equal(t, ConnectTimeout, time.Since(start))

		_, err = n.Dial(context.Background(), "tcp", "203.0.113.12:2222") // another port of a live host
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
		n.RemoveHost("203.0.113.12:22")
		_, err = n.Dial(context.Background(), "tcp", "203.0.113.12:22")
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
		assert.Nil(t, n.Host("203.0.113.12:22"))
		_, err = n.Dial(context.Background(), "udp", "203.0.113.12:22")
		assert.Error(t, err)

		// Close cuts a dial waiting on a silent address.
		errc := make(chan error, 1)
		go func() {
			_, err := n.Dial(context.Background(), "tcp", "192.0.2.98:22")
			errc <- err
		}()
		synctest.Wait()
		require.NoError(t, n.Close())
		assert.ErrorIs(t, <-errc, net.ErrClosed)
	})
}

func TestSSHAuth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		good, late, stranger := testSigner(t, "good"), testSigner(t, "late"), testSigner(t, "stranger")
		keys := &keyList{}
		keys.add(good)
		h := n.AddHost(HostConfig{Addr: "203.0.113.13:22", User: "hotaisle", AuthorizedKeys: keys.get})
		ctx := context.Background()

		_, err := dialSSH(ctx, n.Dial, h.Addr(), "root", good, h.PublicKey())
		assert.ErrorContains(t, err, "unable to authenticate", "wrong user")
		_, err = dialSSH(ctx, n.Dial, h.Addr(), "hotaisle", stranger, h.PublicKey())
		assert.ErrorContains(t, err, "unable to authenticate", "unknown key")
		_, err = dialSSH(ctx, n.Dial, h.Addr(), "hotaisle", late, h.PublicKey())
		assert.ErrorContains(t, err, "unable to authenticate", "key not registered yet")

		keys.add(late) // registered after the host appeared: consulted live
		c, err := dialSSH(ctx, n.Dial, h.Addr(), "hotaisle", late, h.PublicKey())
		require.NoError(t, err)
		c.Close()
		c, err = dialSSH(ctx, n.Dial, h.Addr(), "hotaisle", good, h.PublicKey())
		require.NoError(t, err)
		c.Close()
	})
}

func TestSSHHostKeyDeterministicAndRotated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := testSigner(t, "a")
		cfg := HostConfig{Addr: "203.0.113.14:22", InstanceID: "i-1", User: "root", AuthorizedKeys: authorized(key)}
		n1, n2, n3 := NewNetwork(nil, 7), NewNetwork(nil, 7), NewNetwork(nil, 8)
		defer n1.Close()
		h1, h2, h3 := n1.AddHost(cfg), n2.AddHost(cfg), n3.AddHost(cfg)
		other := cfg
		other.Addr = "203.0.113.15:22"
		h4 := n1.AddHost(other)
		same := func(a, b ssh.PublicKey) bool { return string(a.Marshal()) == string(b.Marshal()) }
		assert.Equal(t, ssh.KeyAlgoED25519, h1.PublicKey().Type())
		assert.True(t, same(h1.PublicKey(), h2.PublicKey()), "same seed, addr and instance")
		assert.False(t, same(h1.PublicKey(), h3.PublicKey()), "another seed")
		assert.False(t, same(h1.PublicKey(), h4.PublicKey()), "another address")

		old := h1.PublicKey()
		c := mustDial(t, n1, h1, key)
		c.Close()
		rotated := h1.RotateHostKey()
		assert.False(t, same(old, rotated))
		_, err := dialSSH(context.Background(), n1.Dial, cfg.Addr, "root", key, old)
		assert.ErrorContains(t, err, "host key mismatch")
		c = mustDial(t, n1, h1, key)
		c.Close()

		// A new server reusing the IP has a new key.
		reused := cfg
		reused.InstanceID = "i-2"
		h5 := n1.AddHost(reused)
		assert.False(t, same(h5.PublicKey(), old))
		assert.False(t, same(h5.PublicKey(), rotated))
		assert.Same(t, h5, n1.Host(cfg.Addr))
	})
}

// A host added with KeyGeneration n (a server reinstalled n times, same
// name and address) presents the key a generation-0 host has after n
// rotations, and a new one at every generation.
func TestSSHHostKeyGenerationFromConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := testSigner(t, "a")
		cfg := HostConfig{Addr: "10.20.4.12:22", InstanceID: "enc1-gpu012", User: "hotaisle", AuthorizedKeys: authorized(key)}
		n := NewNetwork(nil, 7)
		defer n.Close()
		first := string(n.AddHost(cfg).PublicKey().Marshal())
		rotated := n.Host(cfg.Addr).RotateHostKey()
		cfg.KeyGeneration = 1
		second := n.AddHost(cfg)
		assert.NotEqual(t, first, string(second.PublicKey().Marshal()), "a reinstalled server has a new key")
		assert.Equal(t, string(rotated.Marshal()), string(second.PublicKey().Marshal()))
		cfg.KeyGeneration = 2
		third := n.AddHost(cfg).PublicKey().Marshal()
		assert.NotEqual(t, string(second.PublicKey().Marshal()), string(third))
		assert.NotEqual(t, first, string(third))
		c := mustDial(t, n, n.Host(cfg.Addr), key)
		c.Close()
	})
}

func TestSSHJumpToPrivateHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		key := testSigner(t, "a")
		priv := n.AddHost(HostConfig{Addr: "10.20.4.12:22", InstanceID: "enc1-gpu012", User: "hotaisle",
			AuthorizedKeys: authorized(key), Private: true})
		jump := n.AddHost(HostConfig{Addr: "198.51.100.7:22013", User: "hotaisle", AuthorizedKeys: authorized(key), Jump: true})
		plain := n.AddHost(HostConfig{Addr: "203.0.113.16:22", User: "hotaisle", AuthorizedKeys: authorized(key)})

		jc := mustDial(t, n, jump, key)
		defer jc.Close()
		conn, err := jc.Dial("tcp", priv.Addr())
		require.NoError(t, err)
		pc, err := handshake(context.Background(), conn, priv.Addr(), "hotaisle", key, priv.PublicKey())
		require.NoError(t, err)
		out, _, exit := run(t, pc, "hostname", "")
		assert.Equal(t, 0, exit)
		assert.Equal(t, "enc1-gpu012\n", out)
		assert.Len(t, priv.Commands(), 1)
		assert.Empty(t, jump.Commands())
		pc.Close()

		// The private host's schedule applies behind the jump.
		priv.SetSchedule(HostSchedule{RefuseUntil: time.Now().Add(time.Minute)})
		_, err = jc.Dial("tcp", priv.Addr())
		assert.ErrorContains(t, err, "Connection refused")
		_, err = jc.Dial("tcp", "10.20.4.99:22")
		assert.ErrorContains(t, err, "No route to host")

		// A host that is not a jump host forwards only to its own agent port.
		c := mustDial(t, n, plain, key)
		defer c.Close()
		_, err = c.Dial("tcp", priv.Addr())
		assert.ErrorContains(t, err, "prohibited")
	})
}

func TestSSHRemoveHostAndCloseNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		key := testSigner(t, "a")
		h := n.AddHost(HostConfig{Addr: "203.0.113.17:22", User: "root", AuthorizedKeys: authorized(key)})
		h2 := n.AddHost(HostConfig{Addr: "203.0.113.18:22", User: "root", AuthorizedKeys: authorized(key)})
		c := mustDial(t, n, h, key)
		installAgent(t, c)
		_, _, exit := run(t, c, "nohup dstack-shim >/dev/null 2>&1 &", "")
		require.Equal(t, 0, exit)
		require.True(t, h.AgentRunning())

		n.RemoveHost(h.Addr())
		synctest.Wait()
		assert.False(t, h.AgentRunning(), "a destroyed server's agent is gone")
		_, err := c.NewSession()
		assert.Error(t, err, "live connections are closed")
		c.Close()

		c2 := mustDial(t, n, h2, key)
		require.NoError(t, n.Close())
		_, err = c2.NewSession()
		assert.Error(t, err)
		c2.Close()
		_, err = n.Dial(context.Background(), "tcp", h2.Addr())
		assert.ErrorIs(t, err, net.ErrClosed)
	})
}

// With the real clock too, Close leaves no goroutine behind.
func TestNetworkCloseLeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	n := NewNetwork(nil, 1)
	key := testSigner(t, "a")
	h := n.AddHost(HostConfig{Addr: "203.0.113.19:22", User: "root", AuthorizedKeys: authorized(key)})
	c := mustDial(t, n, h, key)
	installAgent(t, c)
	_, _, exit := run(t, c, "sudo setsid -f dstack-shim >/dev/null 2>&1", "")
	require.Equal(t, 0, exit)
	s, err := c.NewSession()
	require.NoError(t, err)
	require.NoError(t, s.Start("cat")) // blocks reading stdin
	fwd, err := c.Dial("tcp", "127.0.0.1:10998")
	require.NoError(t, err) // an open forwarded connection
	status, _, err := getOn(fwd, "/api/healthcheck")
	require.NoError(t, err)
	require.Equal(t, 200, status)
	require.NoError(t, n.Close())
	c.Close()
	assert.True(t, h.AgentRunning(), "a detached agent outlives the connections")
}
