package shim

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/sync/errgroup"
)

// The exact commands a root Start runs on a systemd host (dstack-shim preset).
var wantSystemdCommands = []string{
	`sh -c 'mkdir -p /root/.dstack /usr/local/bin'`,
	`sh -c 'curl -fsS --compressed --connect-timeout 60 --max-time 240 --retry 1 -o /usr/local/bin/dstack-shim.download '\''https://dstack-runner-downloads.s3.eu-west-1.amazonaws.com/0.19.41/binaries/dstack-shim-linux-amd64'\'' && chmod +x /usr/local/bin/dstack-shim.download && mv -f /usr/local/bin/dstack-shim.download /usr/local/bin/dstack-shim'`,
	`sh -c 'test -d /run/systemd/system'`,
	`sh -c 'cat > /etc/systemd/system/dstack-shim.service'`,
	`sh -c 'systemctl daemon-reload && systemctl enable dstack-shim.service && systemctl restart dstack-shim.service'`,
}

// S16: the host refuses TCP for 20 s, then closes before the banner for
// 10 s, then rejects the key for 15 s, then works: one Start gets through
// all three stages within its deadline and starts the agent detached.
func TestStartS16StagedSSH(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		t0 := time.Now()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.10:22", InstanceID: "vm-1",
			Schedule: sim.HostSchedule{RefuseUntil: t0.Add(20 * time.Second),
				NoBannerUntil: t0.Add(30 * time.Second), RejectKeysUntil: t0.Add(45 * time.Second)}})
		log := &stageLog{}
		s := simStarter(t, n, PinnedKey(h.PublicKey()), WithLogger(slog.New(log)))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()

		require.NoError(t, s.Start(ctx, instOf(t, h)))
		took := time.Since(t0)
		assert.GreaterOrEqual(t, took, 45*time.Second)
		assert.Less(t, took, 55*time.Second, "backoff is capped at 5 s")
		assert.Equal(t, []string{"dial", "banner", "auth"}, log.distinct())
		assert.Equal(t, wantSystemdCommands, commandsOf(h))
		synctest.Wait() // the sessions have ended on the host too
		unit, ok := h.ReadFile("/etc/systemd/system/dstack-shim.service")
		require.True(t, ok)
		assert.Contains(t, string(unit), "ExecStart=/usr/local/bin/dstack-shim\n")
		assert.Contains(t, string(unit), `Environment="DSTACK_SHIM_HTTP_PORT=10998"`)
		assert.Contains(t, string(unit), "Restart=always")
		assert.True(t, h.AgentRunning())
		assert.True(t, h.AgentDetached())
		assert.Equal(t, 1, h.AgentStarts())
	})
}

// S16: a host that accepts TCP and never sends its banner is cut by ctx.
func TestStartS16HangingHandshakeCutByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.11:22", InstanceID: "vm-2",
			Schedule: sim.HostSchedule{HangUntil: time.Now().Add(24 * time.Hour)}})
		// A per-attempt handshake timeout longer than ctx: only ctx can cut.
		s := simStarter(t, n, PinnedKey(h.PublicKey()), WithTimeouts(Timeouts{Handshake: time.Hour}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		t0 := time.Now()
		err := s.Start(ctx, instOf(t, h))
		assert.Equal(t, time.Minute, time.Since(t0))
		var ce *ConnectError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, StageBanner, StageOf(err))
		assert.Equal(t, 1, ce.Attempts)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Empty(t, h.Commands())
	})
}

// A handshake that hangs for a while is cut by the per-attempt timeout and
// retried.
func TestStartHandshakeTimeoutRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		t0 := time.Now()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.12:22", InstanceID: "vm-3",
			Schedule: sim.HostSchedule{HangUntil: t0.Add(40 * time.Second)}})
		s := simStarter(t, n, PinnedKey(h.PublicKey()), WithTimeouts(Timeouts{Handshake: 15 * time.Second}))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		require.NoError(t, s.Start(ctx, instOf(t, h)))
		assert.Less(t, time.Since(t0), 50*time.Second)
		assert.True(t, h.AgentRunning())
	})
}

// S17: the agent outlives the session; two concurrent Starts start it once.
func TestStartS17DetachedAndOnce(t *testing.T) {
	for _, systemd := range []bool{true, false} {
		t.Run(map[bool]string{true: "systemd", false: "nohup"}[systemd], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := sim.NewNetwork(nil, 1)
				defer n.Close()
				h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.20:22", InstanceID: "vm-17", NoSystemd: !systemd})
				s := simStarter(t, n, TrustOnFirstUse(NewMemoryHostKeyStore()))
				inst := instOf(t, h)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				var g errgroup.Group
				g.Go(func() error { return s.Start(ctx, inst) })
				g.Go(func() error { return s.Start(ctx, inst) })
				require.NoError(t, g.Wait())
				assert.Equal(t, 1, h.AgentStarts(), "started once")
				// Every session of both Starts has ended; the agent still runs.
				synctest.Wait()
				assert.True(t, h.AgentRunning())
				assert.True(t, h.AgentDetached())
				require.NoError(t, s.Check(ctx, inst))
				assert.Equal(t, 1, h.AgentStarts())
				cmds := commandsOf(h)
				if systemd {
					assert.Equal(t, wantSystemdCommands, cmds)
					return
				}
				require.Len(t, cmds, 4)
				assert.Equal(t, wantSystemdCommands[:3], cmds[:3])
				assert.Equal(t, `sh -c 'DSTACK_RUNNER_BINARY_PATH='\''/usr/local/bin/dstack-runner'\'' `+
					`DSTACK_RUNNER_DOWNLOAD_URL='\''https://dstack-runner-downloads.s3.eu-west-1.amazonaws.com/0.19.41/binaries/dstack-runner-linux-amd64'\'' `+
					`DSTACK_RUNNER_HTTP_PORT='\''10999'\'' DSTACK_RUNNER_LOG_LEVEL='\''5'\'' DSTACK_RUNNER_SSH_PORT='\''10022'\'' `+
					`DSTACK_SHIM_HOME='\''/root/.dstack'\'' DSTACK_SHIM_HTTP_PORT='\''10998'\'' DSTACK_SHIM_LOG_LEVEL='\''5'\'' `+
					`setsid nohup /usr/local/bin/dstack-shim >>/root/.dstack/shim.log 2>&1 & echo $! >/run/dstack-shim.pid'`, cmds[3])
				pid, ok := h.ReadFile("/run/dstack-shim.pid")
				require.True(t, ok)
				assert.NotEmpty(t, strings.TrimSpace(string(pid)))
			})
		})
	}
}

// An agent killed after a start is started again by the next Start.
func TestStartRestartsDeadAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.21:22", InstanceID: "vm-21"})
		s := simStarter(t, n, TrustOnFirstUse(NewMemoryHostKeyStore()))
		inst := instOf(t, h)
		ctx := context.Background()
		require.NoError(t, s.Start(ctx, inst))
		ran := len(h.Commands())
		require.NoError(t, s.Start(ctx, inst))
		assert.Len(t, h.Commands(), ran, "already healthy: no command run")

		require.True(t, h.KillAgent())
		var he *HealthError
		require.ErrorAs(t, s.Check(ctx, inst), &he)
		require.NoError(t, s.Start(ctx, inst))
		assert.Equal(t, 2, h.AgentStarts())
		assert.True(t, h.AgentRunning())
	})
}

// Hot Aisle bare metal: a private host reached through the ssh_access jump
// host, as a non-root user (sudo).
func TestStartThroughJumpHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		jump := addSimHost(t, n, sim.HostConfig{Addr: "198.51.100.7:22", InstanceID: "ssh-access", User: "hotaisle", Jump: true})
		h := addSimHost(t, n, sim.HostConfig{Addr: "10.20.0.5:22", InstanceID: "bm-1", User: "hotaisle", Private: true})
		store := NewMemoryHostKeyStore()
		s := simStarter(t, n, TrustOnFirstUse(store))
		inst := instOf(t, h)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()

		// Directly, the private address answers nothing.
		var ce *ConnectError
		require.ErrorAs(t, s.Check(ctx, inst), &ce)
		assert.Equal(t, StageDial, ce.Stage)

		inst.SSH.Jump = &fleet.SSHEndpoint{User: "hotaisle", Host: "198.51.100.7", Port: 22}
		require.NoError(t, s.Start(ctx, inst))
		synctest.Wait()
		assert.True(t, h.AgentDetached())
		assert.Empty(t, jump.Commands(), "nothing runs on the jump host")
		for _, c := range commandsOf(h) {
			assert.True(t, strings.HasPrefix(c, "sudo -n sh -c '"), c)
		}
		require.NoError(t, s.Check(ctx, inst))
		jk, _ := store.HostKey("jump:198.51.100.7:22")
		hk, _ := store.HostKey("bm-1")
		assert.True(t, keysEqual(jk, jump.PublicKey()))
		assert.True(t, keysEqual(hk, h.PublicKey()))
	})
}

// A failing install step stops the start with its stderr and exit status.
func TestStartFailingStepSurfacesStderr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.30:22", InstanceID: "vm-30"})
		h.FailCommand("curl", 1, "curl: (22) The requested URL returned error: 403\n", 22)
		s := simStarter(t, n, PinnedKey(h.PublicKey()))
		err := s.Start(context.Background(), instOf(t, h))
		var se *StepError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, StageStep, StageOf(err))
		assert.Equal(t, 2, se.Index)
		assert.Equal(t, "download dstack-shim", se.Step)
		assert.Equal(t, 22, se.ExitStatus)
		assert.Equal(t, "curl: (22) The requested URL returned error: 403\n", se.Stderr)
		assert.Contains(t, err.Error(), "returned error: 403")
		assert.Len(t, h.Commands(), 2, "nothing runs after the failed step")
		assert.Zero(t, h.AgentStarts())
	})
}

// A step that outlives its timeout fails with a timeout, at the timeout.
func TestStartStepTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.31:22", InstanceID: "vm-31"})
		spec := DstackShim(shimVersion)
		// The agent run in the foreground never ends.
		spec.Install = append(spec.Install, Step{Name: "foreground", Command: DstackShimBinary, Timeout: 10 * time.Second})
		s, err := New(spec, []ssh.Signer{clientKey(t)}, PinnedKey(h.PublicKey()), WithDial(n.Dial), WithLogger(testLogger(t)))
		require.NoError(t, err)
		t0 := time.Now()
		err = s.Start(context.Background(), instOf(t, h))
		assert.Equal(t, 10*time.Second, time.Since(t0))
		var se *StepError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 3, se.Index)
		assert.Equal(t, -1, se.ExitStatus)
		var te interface{ Timeout() bool }
		require.ErrorAs(t, err, &te)
		assert.True(t, te.Timeout())
		synctest.Wait() // let the host notice the closed connection
		assert.False(t, h.AgentRunning(), "the session-tied process died with the connection")
	})
}
