package shim

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// findSSHD returns the sshd binary's absolute path; it skips the test when
// there is none, unless CI=true, where a missing sshd fails it.
func findSSHD(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("sshd"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err == nil {
		return "/usr/sbin/sshd"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("sshd not found (install openssh-server); required when CI=true")
	}
	t.Skip("sshd not found (install openssh-server to run this test)")
	return ""
}

// realSSHD is an OpenSSH sshd on a loopback port with a temporary config.
type realSSHD struct {
	addr    string
	hostKey ssh.PublicKey
	dir     string
	stderr  *bytes.Buffer
}

// startSSHD runs sshd -D -e on 127.0.0.1 with a host key generated here,
// authorising client; it is killed when the test ends.
func startSSHD(t *testing.T, client ssh.PublicKey) *realSSHD {
	t.Helper()
	bin := findSSHD(t)
	dir := t.TempDir()
	hostSigner := testSigner(t, "sshd host key")
	priv, err := ssh.MarshalPrivateKey(testKey("sshd host key"), "")
	require.NoError(t, err)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	hostKeyPath := write("host_ed25519", pem.EncodeToMemory(priv))
	authPath := write("authorized_keys", ssh.MarshalAuthorizedKey(client))
	port := freePort(t)
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
AllowTcpForwarding yes
LogLevel VERBOSE
`, port, hostKeyPath, authPath, filepath.Join(dir, "sshd.pid"))
	cfgPath := write("sshd_config", []byte(cfg))
	if os.Geteuid() == 0 {
		// sshd's compiled-in privilege separation directory; systemd's unit
		// creates it on real hosts.
		require.NoError(t, os.MkdirAll("/run/sshd", 0o755))
	}
	stderr := &bytes.Buffer{}
	cmd := exec.Command(bin, "-D", "-e", "-f", cfgPath)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // sshd and its session children
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sshd log:\n%s", stderr.String())
		}
	})
	return &realSSHD{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), hostKey: hostSigner.PublicKey(), dir: dir, stderr: stderr}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

func currentUser(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	require.NoError(t, err)
	return u.Username
}

// pidAlive reads a pid file and reports whether its process runs.
func pidAlive(path string) (int, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

// TestSSHDInterop runs the Starter against a real OpenSSH sshd: dial (with
// retries while sshd starts), auth, host key policies, checked steps with
// stderr, a detached start that outlives the session, and health through a
// direct-tcpip forward to an HTTP server standing in for the agent.
func TestSSHDInterop(t *testing.T) {
	clientKey := testSigner(t, "client")
	d := startSSHD(t, clientKey.PublicKey())
	agentDir := t.TempDir()
	pidFile := filepath.Join(agentDir, "agent.pid")

	// The agent's health endpoint: healthy while the detached process whose
	// pid the start recorded is alive.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, alive := pidAlive(pidFile); !alive || r.URL.Path != "/health" {
			http.Error(w, "not running", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"service":"test-agent","version":"1.2.3"}`)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if pid, alive := pidAlive(pidFile); alive {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // setsid made it a group leader
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	agentPort := srv.Listener.Addr().(*net.TCPAddr).Port

	spec := AgentSpec{
		Name: "test-agent",
		Install: []Step{{Name: "prepare", Command: "mkdir -p " + agentDir + "/bin && echo preparing >&2 && touch " +
			agentDir + "/installed"}},
		Command:    "sleep 300",
		Env:        map[string]string{"AGENT_MODE": "test"},
		HealthPort: agentPort, HealthPath: "/health", Service: "test-agent",
		PIDFile: pidFile, LogFile: filepath.Join(agentDir, "agent.log"),
	}
	host, portStr, _ := net.SplitHostPort(d.addr)
	port, _ := strconv.Atoi(portStr)
	inst := fleet.Instance{ID: "i-real", SSH: fleet.SSHEndpoint{User: currentUser(t), Host: host, Port: port}}
	newStarter := func(p HostKeyPolicy, spec AgentSpec) *Starter {
		s, err := New(spec, []ssh.Signer{clientKey}, p, WithSudo(false), WithSupervisor(SupervisorNohup),
			WithBackoff(50*time.Millisecond, 200*time.Millisecond),
			WithTimeouts(Timeouts{Health: 20 * time.Second}), WithLogger(testLogger(t)))
		require.NoError(t, err)
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// sshd may not listen yet: Connect retries the refused dials.
	c, err := newStarter(PinnedKey(d.hostKey), spec).Connect(ctx, inst)
	require.NoError(t, err)
	require.NoError(t, c.Close())

	t.Run("start", func(t *testing.T) {
		s := newStarter(PinnedKey(d.hostKey), spec)
		require.ErrorAs(t, s.Check(ctx, inst), new(*HealthError), "nothing runs yet")
		require.NoError(t, s.Start(ctx, inst))
		_, err := os.Stat(filepath.Join(agentDir, "installed"))
		require.NoError(t, err, "the install step ran")
		pid, alive := pidAlive(pidFile)
		require.True(t, alive, "the agent outlived the SSH session")
		require.NoError(t, s.Check(ctx, inst))
		require.NoError(t, s.Start(ctx, inst), "already healthy: nothing to do")
		pid2, _ := pidAlive(pidFile)
		assert.Equal(t, pid, pid2, "not started twice")
	})

	t.Run("jump host", func(t *testing.T) {
		// sshd as its own jump host: the second hop is a direct-tcpip channel.
		s := newStarter(PinnedKey(d.hostKey), spec)
		j := inst
		j.SSH.Jump = &fleet.SSHEndpoint{User: inst.SSH.User, Host: host, Port: port}
		require.NoError(t, s.Check(ctx, j))
	})

	t.Run("known_hosts and TOFU", func(t *testing.T) {
		kh := filepath.Join(t.TempDir(), "known_hosts")
		require.NoError(t, os.WriteFile(kh, []byte(knownhosts.Line([]string{d.addr}, d.hostKey)+"\n"), 0o600))
		p, err := KnownHosts(kh)
		require.NoError(t, err)
		require.NoError(t, newStarter(p, spec).Check(ctx, inst))

		store := NewMemoryHostKeyStore()
		require.NoError(t, newStarter(TrustOnFirstUse(store), spec).Check(ctx, inst))
		got, _ := store.HostKey(inst.ID)
		require.True(t, keysEqual(got, d.hostKey), "pinned the host's key")
	})

	t.Run("wrong pinned key", func(t *testing.T) {
		s := newStarter(PinnedKey(testSigner(t, "other").PublicKey()), spec)
		err := s.Start(ctx, inst)
		var mm *HostKeyMismatchError
		require.ErrorAs(t, err, &mm)
		var ce *ConnectError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, StageHostKey, ce.Stage)
		assert.Equal(t, 1, ce.Attempts, "never retried")
	})

	t.Run("failing step", func(t *testing.T) {
		bad := spec
		bad.Name = "bad-agent"
		bad.Install = []Step{{Name: "download", Command: "echo fetching; echo 'curl: (22) 404 Not Found' >&2; exit 22"}}
		err := newStarter(PinnedKey(d.hostKey), bad).installOnly(ctx, t, inst)
		var se *StepError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 22, se.ExitStatus)
		assert.Equal(t, 1, se.Index)
		assert.Equal(t, "download", se.Step)
		assert.Contains(t, se.Stderr, "curl: (22) 404 Not Found")
		assert.NotContains(t, se.Stderr, "fetching")
	})

	t.Run("unknown user is an auth failure", func(t *testing.T) {
		s := newStarter(PinnedKey(d.hostKey), spec)
		other := inst
		other.SSH.User = "nosuchuser"
		err := s.Check(ctx, other)
		var ce *ConnectError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, StageAuth, ce.Stage)
	})

	t.Run("refused", func(t *testing.T) {
		s := newStarter(PinnedKey(d.hostKey), spec)
		other := inst
		other.SSH.Port = freePort(t)
		err := s.Check(ctx, other)
		var ce *ConnectError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, StageDial, ce.Stage)
		assert.True(t, errors.Is(err, syscall.ECONNREFUSED), err)
	})
}

// installOnly connects and runs the install steps (Start would check
// health first).
func (s *Starter) installOnly(ctx context.Context, t *testing.T, inst fleet.Instance) error {
	t.Helper()
	c, err := s.connect(ctx, inst, true)
	require.NoError(t, err)
	defer c.Close()
	return s.install(ctx, c)
}
