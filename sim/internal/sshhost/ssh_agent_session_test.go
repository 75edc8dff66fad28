package sshhost

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What OpenSSH's sshd does (checked against OpenSSH 9 without a pty): it
// ends an exec session when the command has exited AND every copy of the
// session's stdout/stderr is closed. So
//   - `sh -c 'X >log 2>&1 &'` returns at once (X holds no session fd), and
//     X survives the session and the connection (nothing signals it);
//   - `nohup X &` and `setsid X &` without redirections keep the session
//     open as long as X runs (nohup redirects only a terminal's output).

// A background agent with its output redirected: the exec returns at once
// and the agent survives the connection.
func TestSSHRedirectedBackgroundAgentIsNotTiedToSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, h, _, c := agentHost(t, "root")
		defer n.Close()
		s, err := c.NewSession()
		require.NoError(t, err)
		require.NoError(t, s.Start("sh -c 'dstack-shim >/tmp/shim.log 2>&1 &'"))
		done := make(chan error, 1)
		var wg sync.WaitGroup
		wg.Go(func() { done <- s.Wait() })
		synctest.Wait()
		ended := len(done) == 1
		assert.True(t, ended, "the exec returns once sh exits: no session fd is held")
		s.Close()
		wg.Wait()
		c.Close()
		synctest.Wait()
		assert.True(t, h.AgentRunning(), "the agent outlives its session and connection")
	})
}

// nohup with & but without redirections: the agent holds the session's
// stdout, so sshd keeps the session open while it runs.
func TestSSHNohupWithoutRedirectHoldsTheSession(t *testing.T) {
	for _, cmd := range []string{"nohup dstack-shim &", "setsid dstack-shim &"} {
		t.Run(cmd, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n, h, _, c := agentHost(t, "root")
				defer n.Close()
				defer c.Close()
				s, err := c.NewSession()
				require.NoError(t, err)
				require.NoError(t, s.Start(cmd))
				done := make(chan error, 1)
				var wg sync.WaitGroup
				wg.Go(func() { done <- s.Wait() })
				synctest.Wait()
				assert.True(t, h.AgentRunning())
				assert.Empty(t, done, "the session stays open while the agent holds its stdout")
				s.Close()
				wg.Wait()
			})
		})
	}
}
