package shim

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// silentHost is an in-memory SSH server whose agent port accepts every
// direct-tcpip forward and never answers (a wedged agent: the port is
// open, the HTTP request is read, no byte comes back).
type silentHost struct {
	cfg   *ssh.ServerConfig
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func newSilentHost(t *testing.T) *silentHost {
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil }}
	cfg.AddHostKey(testSigner(t, "silent host"))
	return &silentHost{cfg: cfg}
}

func (h *silentHost) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, c2 := net.Pipe() // chained through two copiers, so both sides may write first
	s2, s := net.Pipe()
	h.mu.Lock()
	h.conns = append(h.conns, c2, s2, s)
	h.mu.Unlock()
	h.wg.Add(2)
	go func() { defer h.wg.Done(); _, _ = io.Copy(s2, c2); s2.Close() }()
	go func() { defer h.wg.Done(); _, _ = io.Copy(c2, s2); c2.Close() }()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		sc, chans, reqs, err := ssh.NewServerConn(s, h.cfg)
		if err != nil {
			return
		}
		defer sc.Close()
		go ssh.DiscardRequests(reqs)
		for nc := range chans {
			if nc.ChannelType() != "direct-tcpip" {
				_ = nc.Reject(ssh.Prohibited, "no sessions")
				continue
			}
			ch, creqs, err := nc.Accept()
			if err != nil {
				continue
			}
			go ssh.DiscardRequests(creqs)
			h.wg.Add(1)
			go func() { // read the request, answer nothing, until closed
				defer h.wg.Done()
				buf := make([]byte, 4096)
				for {
					if _, err := ch.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return c, nil
}

func (h *silentHost) close() {
	h.mu.Lock()
	for _, c := range h.conns {
		c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// Check against an agent port that accepts and never answers: it must end
// by its deadline (one health request, Timeouts.HealthRequest) with a
// *HealthError at StageHealth, never hang.
func TestCheckSilentAgentTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSilentHost(t)
		defer h.close()
		s, err := New(DstackShim(shimVersion), []ssh.Signer{clientKey(t)}, InsecureIgnoreHostKey(),
			WithDial(h.dial), WithLogger(testLogger(t)), WithTimeouts(Timeouts{HealthRequest: 9 * time.Second}))
		require.NoError(t, err)
		inst := fleet.Instance{ID: "vm-silent", SSH: fleet.SSHEndpoint{User: "root", Host: "203.0.113.90", Port: 22}}
		done := make(chan error, 1)
		t0 := time.Now()
		go func() { done <- s.Check(context.Background(), inst) }()
		var cerr error
		select {
		case cerr = <-done:
		case <-time.After(time.Hour):
			t.Fatal("Check still waiting on a silent agent after an hour of fake time")
		}
		assert.LessOrEqual(t, time.Since(t0), 9*time.Second, "one health request's deadline")
		var he *HealthError
		require.ErrorAs(t, cerr, &he)
		assert.Equal(t, StageHealth, StageOf(cerr))
	})
}

// Start against the same wedged agent never gets a session; here only the
// ctx deadline is given: Start must end by it.
func TestCheckSilentAgentCtxDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSilentHost(t)
		defer h.close()
		s, err := New(DstackShim(shimVersion), []ssh.Signer{clientKey(t)}, InsecureIgnoreHostKey(),
			WithDial(h.dial), WithLogger(testLogger(t)), WithTimeouts(Timeouts{HealthRequest: time.Hour}))
		require.NoError(t, err)
		inst := fleet.Instance{ID: "vm-silent", SSH: fleet.SSHEndpoint{User: "root", Host: "203.0.113.90", Port: 22}}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		t0 := time.Now()
		err = s.Check(ctx, inst)
		assert.LessOrEqual(t, time.Since(t0), 20*time.Second)
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// An agent that starts, turns healthy, then dies: Check reports a
// *HealthError at once (the forward to a closed port is refused).
func TestAgentDiesAfterStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.91:22", InstanceID: "vm-91"})
		s := simStarter(t, n, PinnedKey(h.PublicKey()), WithTimeouts(Timeouts{Health: time.Minute}))
		require.NoError(t, s.Start(context.Background(), instOf(t, h)))
		require.True(t, h.KillAgent())
		t0 := time.Now()
		err := s.Check(context.Background(), instOf(t, h))
		assert.LessOrEqual(t, time.Since(t0), 9*time.Second)
		var he *HealthError
		require.ErrorAs(t, err, &he)
		// Start again restarts it.
		require.NoError(t, s.Start(context.Background(), instOf(t, h)))
		require.NoError(t, s.Check(context.Background(), instOf(t, h)))
	})
}

// The agent dies while Start waits for it to turn healthy: Start ends by
// Timeouts.Health with a *HealthError.
func TestAgentDiesDuringHealthWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.92:22", InstanceID: "vm-92"})
		h.SetAgent(sim.AgentSpec{ReadyAfter: 30 * time.Second})
		s := simStarter(t, n, PinnedKey(h.PublicKey()), WithTimeouts(Timeouts{Health: time.Minute}))
		go func() {
			time.Sleep(10 * time.Second)
			h.KillAgent()
		}()
		t0 := time.Now()
		err := s.Start(context.Background(), instOf(t, h))
		assert.LessOrEqual(t, time.Since(t0), time.Minute+10*time.Second)
		var he *HealthError
		require.ErrorAs(t, err, &he)
		assert.False(t, h.AgentRunning())
	})
}

// The host key changes between Start and Check (trust on first use): Check
// refuses with a *HostKeyMismatchError and does not retry.
func TestHostKeyChangesBetweenStartAndCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.93:22", InstanceID: "vm-93"})
		s := simStarter(t, n, TrustOnFirstUse(NewMemoryHostKeyStore()))
		require.NoError(t, s.Start(context.Background(), instOf(t, h)))
		h.RotateHostKey()
		t0 := time.Now()
		err := s.Check(context.Background(), instOf(t, h))
		assert.Zero(t, time.Since(t0))
		var me *HostKeyMismatchError
		require.ErrorAs(t, err, &me)
		// and Start too, within its retries: refused, not retried forever
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		err = s.Start(ctx, instOf(t, h))
		require.ErrorAs(t, err, &me)
		assert.Less(t, time.Since(t0), time.Minute, "a changed key is not retried")
	})
}
