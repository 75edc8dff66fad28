package sshhost

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

const healthOK = `{"service":"dstack-shim","version":"0.19.41"}`

// agentHost returns a network, a host with user, and a client with the
// agent binary installed.
func agentHost(t *testing.T, user string) (*Network, *Host, ssh.Signer, *ssh.Client) {
	n := NewNetwork(nil, 1)
	key := testSigner(t, "a")
	h := n.AddHost(HostConfig{Addr: "203.0.113.30:22", User: user, AuthorizedKeys: authorized(key)})
	c := mustDial(t, n, h, key)
	installAgent(t, c)
	return n, h, key, c
}

// S17: a systemd unit survives the session; a second start is a no-op.
func TestSSHAgentSystemdDetached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, h, key, c := agentHost(t, "hotaisle")
		defer n.Close()
		_, _, err := get(c, "10998", "/api/healthcheck")
		assert.ErrorContains(t, err, "Connection refused", "not started yet")

		_, errOut, exit := run(t, c, "systemctl start dstack-shim", "")
		assert.Equal(t, 1, exit)
		assert.Contains(t, errOut, "Interactive authentication required", "hotaisle needs sudo")
		_, errOut, exit = run(t, c, "sudo systemctl start dstack-shim", "")
		assert.Equal(t, 5, exit, "no unit file yet")
		assert.Contains(t, errOut, "Unit dstack-shim.service not found")

		_, errOut, exit = run(t, c, "sudo tee /etc/systemd/system/dstack-shim.service >/dev/null && sudo systemctl daemon-reload && sudo systemctl enable --now dstack-shim", shimUnit)
		require.Equal(t, 0, exit, errOut)
		assert.True(t, h.AgentRunning())
		assert.True(t, h.AgentDetached())
		recs := h.Commands()
		assert.True(t, recs[len(recs)-1].Detached)
		c.Close()

		c = mustDial(t, n, h, key)
		defer c.Close()
		synctest.Wait()
		assert.True(t, h.AgentRunning(), "survives the connection")
		status, body, err := get(c, "10998", "/api/healthcheck")
		require.NoError(t, err)
		assert.Equal(t, 200, status)
		assert.JSONEq(t, healthOK, body)
		out, _, exit := run(t, c, "systemctl is-active dstack-shim", "")
		assert.Equal(t, "active\n", out)
		assert.Equal(t, 0, exit)

		_, _, exit = run(t, c, "sudo systemctl start dstack-shim.service", "")
		assert.Equal(t, 0, exit)
		assert.Equal(t, 1, h.AgentStarts(), "starting an active unit does nothing")
		_, _, exit = run(t, c, "sudo systemctl restart dstack-shim", "")
		assert.Equal(t, 0, exit)
		assert.Equal(t, 2, h.AgentStarts(), "restart starts a new process")
		_, _, exit = run(t, c, "sudo systemctl stop dstack-shim && systemctl is-active --quiet dstack-shim", "")
		assert.Equal(t, 3, exit)
		assert.False(t, h.AgentRunning())
	})
}

func TestSSHAgentSystemdMissingBinary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		key := testSigner(t, "a")
		h := n.AddHost(HostConfig{Addr: "203.0.113.31:22", User: "root", AuthorizedKeys: authorized(key)})
		c := mustDial(t, n, h, key)
		defer c.Close()
		_, errOut, exit := run(t, c, "cat > /etc/systemd/system/dstack-shim.service && systemctl enable --now dstack-shim", shimUnit)
		assert.Equal(t, 1, exit)
		assert.Contains(t, errOut, "Job for dstack-shim.service failed")
		out, _, _ := run(t, c, "systemctl is-active dstack-shim", "")
		assert.Equal(t, "failed\n", out)
		assert.False(t, h.AgentRunning())
		assert.Equal(t, 0, h.AgentStarts())
	})
}

// nohup/setsid with & and redirected output is detached; a second launch is counted (a double
// start) but one process runs.
func TestSSHAgentNohupDetachedAndDoubleStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, h, key, c := agentHost(t, "root")
		defer n.Close()
		start := `nohup /usr/local/bin/dstack-shim >/var/log/dstack-shim.log 2>&1 & echo $! > /run/dstack-shim.pid`
		_, errOut, exit := run(t, c, start, "")
		require.Equal(t, 0, exit, errOut)
		assert.True(t, h.AgentDetached())
		pid, _ := h.ReadFile("/run/dstack-shim.pid")
		out, _, exit := run(t, c, "kill -0 $(cat /run/dstack-shim.pid) && pgrep dstack-shim", "")
		assert.Equal(t, 0, exit)
		assert.Equal(t, string(pid), out)
		c.Close()
		synctest.Wait()
		assert.True(t, h.AgentRunning(), "survives the connection")

		c = mustDial(t, n, h, key)
		defer c.Close()
		_, _, exit = run(t, c, "setsid -f dstack-shim > /dev/null 2>&1", "")
		assert.Equal(t, 0, exit)
		assert.Equal(t, 2, h.AgentStarts(), "a second launch is a double start")
		assert.True(t, h.AgentRunning())
		out, _, _ = run(t, c, "pgrep -f /usr/local/bin/dstack-shim", "")
		assert.Equal(t, string(pid), out, "still the first process")

		_, _, exit = run(t, c, "pkill dstack-shim", "")
		assert.Equal(t, 0, exit)
		assert.False(t, h.AgentRunning())
		_, _, exit = run(t, c, "pgrep dstack-shim", "")
		assert.Equal(t, 1, exit)
	})
}

// A foreground agent, and a background one whose stdout or stderr is still
// the session's (nohup, setsid and disown change nothing there), are tied
// to the session: it stays open while the agent runs, and closing it kills
// the agent. Redirecting both away detaches it, disown or not.
func TestSSHAgentTiedToSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, h, _, c := agentHost(t, "hotaisle")
		defer n.Close()
		defer c.Close()

		s, err := c.NewSession()
		require.NoError(t, err)
		require.NoError(t, s.Start("sudo dstack-shim"))
		synctest.Wait()
		assert.True(t, h.AgentRunning())
		assert.False(t, h.AgentDetached())
		status, _, err := get(c, "10998", "/api/healthcheck")
		require.NoError(t, err)
		assert.Equal(t, 200, status)
		s.Close()
		synctest.Wait()
		assert.False(t, h.AgentRunning(), "died with its session")
		recs := h.Commands()
		assert.Equal(t, -1, recs[len(recs)-1].Exit)
		_, _, err = get(c, "10998", "/api/healthcheck")
		assert.Error(t, err)

		// In the background, an agent still writing to the session's stdout
		// or stderr: the command ends (its exit status is sent) but sshd
		// keeps the session open while the agent runs.
		for _, cmd := range []string{
			"sudo sh -c 'dstack-shim &'",
			"sudo sh -c 'dstack-shim >/tmp/shim.log &'",          // stderr still the session's
			"sudo sh -c 'dstack-shim 2>/dev/null & disown'",      // stdout still the session's
			"sudo sh -c 'nohup dstack-shim >/dev/stderr 2>&1 &'", // /dev/stderr is the session's
			"sudo setsid -f dstack-shim",
		} {
			s, err = c.NewSession()
			require.NoError(t, err)
			require.NoError(t, s.Start(cmd))
			var wg sync.WaitGroup
			waited := make(chan error, 1)
			wg.Go(func() { waited <- s.Wait() })
			synctest.Wait()
			assert.True(t, h.AgentRunning(), cmd)
			assert.False(t, h.AgentDetached(), cmd)
			assert.Empty(t, waited, "%s: the session stays open while the agent lives", cmd)
			recs = h.Commands()
			assert.Equal(t, 0, recs[len(recs)-1].Exit, cmd)
			s.Close()
			wg.Wait()
			synctest.Wait()
			assert.False(t, h.AgentRunning(), "%s: died with its session", cmd)
		}

		// The session ends when the agent dies.
		s, err = c.NewSession()
		require.NoError(t, err)
		require.NoError(t, s.Start("sudo sh -c 'dstack-shim &'"))
		waited := make(chan error, 1)
		var wg sync.WaitGroup
		wg.Go(func() { waited <- s.Wait() })
		synctest.Wait()
		assert.Empty(t, waited)
		require.True(t, h.KillAgent())
		wg.Wait()
		assert.NoError(t, <-waited, "the command's exit status (0) once the agent is gone")

		// Both redirected away: detached, with or without disown (what
		// dstack's Hot Aisle backend runs).
		_, _, exit := run(t, c, "sudo sh -c 'dstack-shim >/tmp/dstack-shim.log 2>&1 & disown'", "")
		assert.Equal(t, 0, exit)
		assert.True(t, h.AgentDetached())
		assert.Equal(t, 8, h.AgentStarts())
		require.True(t, h.KillAgent())
		_, _, exit = run(t, c, "sudo sh -c 'dstack-shim >/dev/null 2>/tmp/err &'", "")
		assert.Equal(t, 0, exit)
		assert.True(t, h.AgentDetached())
		recs = h.Commands()
		assert.True(t, recs[len(recs)-1].Detached)
	})
}

func TestSSHAgentDiesWithConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, h, _, c := agentHost(t, "root")
		defer n.Close()
		s, err := c.NewSession()
		require.NoError(t, err)
		require.NoError(t, s.Start("dstack-shim"))
		synctest.Wait()
		require.True(t, h.AgentRunning())
		c.Close()
		synctest.Wait()
		assert.False(t, h.AgentRunning())
	})
}

func TestSSHAgentHealthVariants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, h, _, c := agentHost(t, "root")
		defer n.Close()
		defer c.Close()
		h.SetAgent(AgentSpec{ReadyAfter: 3 * time.Second})
		_, _, exit := run(t, c, "curl -fsS http://localhost:10998/api/healthcheck", "")
		assert.Equal(t, 7, exit, "nothing listens yet")
		_, _, exit = run(t, c, "setsid -f dstack-shim >/dev/null 2>&1", "")
		require.Equal(t, 0, exit)
		_, _, err := get(c, "10998", "/api/healthcheck")
		assert.ErrorContains(t, err, "Connection refused", "the port opens after ReadyAfter")
		time.Sleep(3 * time.Second)

		// Keep-alive: two requests on one forwarded connection.
		conn, err := c.Dial("tcp", "127.0.0.1:10998")
		require.NoError(t, err)
		for _, p := range []string{"/api/healthcheck", "/api/other"} {
			status, body, err := getOn(conn, p)
			require.NoError(t, err)
			if p == "/api/healthcheck" {
				assert.Equal(t, 200, status)
				assert.JSONEq(t, healthOK, body)
			} else {
				assert.Equal(t, 404, status)
			}
		}
		conn.Close()
		out, _, exit := run(t, c, "curl -fsS http://localhost:10998/api/healthcheck", "")
		assert.Equal(t, 0, exit)
		assert.JSONEq(t, healthOK, out)
		_, _, err = get(c, "10999", "/")
		assert.Error(t, err, "another local port")

		h.SetAgent(AgentSpec{HealthStatus: 500})
		status, _, err := get(c, "10998", "/api/healthcheck")
		require.NoError(t, err)
		assert.Equal(t, 500, status)
		_, errOut, exit := run(t, c, "curl -fsS http://127.0.0.1:10998/api/healthcheck", "")
		assert.Equal(t, 22, exit)
		assert.Contains(t, errOut, "error: 500")

		h.SetAgent(AgentSpec{NeverListens: true})
		_, _, err = get(c, "10998", "/api/healthcheck")
		assert.Error(t, err)
		assert.True(t, h.AgentRunning())
	})
}

// S17: concurrent starts through systemd start the agent once.
func TestSSHAgentConcurrentSystemdStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, h, key, c := agentHost(t, "root")
		defer n.Close()
		defer c.Close()
		h.WriteFile("/etc/systemd/system/dstack-shim.service", []byte(shimUnit), false)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				cc, err := dialSSH(context.Background(), n.Dial, h.Addr(), "root", key, h.PublicKey())
				if !assert.NoError(t, err) {
					return
				}
				defer cc.Close()
				_, errOut, exit, err := runE(cc, "systemctl enable --now dstack-shim", "")
				assert.NoError(t, err)
				assert.Equal(t, 0, exit, errOut)
			})
		}
		wg.Wait()
		assert.Equal(t, 1, h.AgentStarts())
		assert.True(t, h.AgentDetached())
		detached := 0
		for _, r := range h.Commands() {
			if strings.Contains(r.Command, "systemctl") && r.Detached {
				detached++
			}
		}
		assert.Equal(t, 1, detached, "one of the four sessions started it")
	})
}
