package sshhost

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A table of command lines through one connection as the non-root user
// "hotaisle" (sudo works, as on Hot Aisle).
func TestSSHExecInterpreter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		key := testSigner(t, "a")
		h := n.AddHost(HostConfig{Addr: "203.0.113.20:22", InstanceID: "vm-1", User: "hotaisle", AuthorizedKeys: authorized(key)})
		c := mustDial(t, n, h, key)
		defer c.Close()
		cases := []struct {
			cmd, stdin, out string
			exit            int
			errHas          string
		}{
			{cmd: "true"},
			{cmd: "false", exit: 1},
			{cmd: "echo hello world", out: "hello world\n"},
			{cmd: `echo "a  b" 'c $HOME' $HOME ~/x`, out: "a  b c $HOME /home/hotaisle /home/hotaisle/x\n"},
			{cmd: "uname -m", out: "x86_64\n"},
			{cmd: "id -u", out: "1000\n"},
			{cmd: "sudo id -u", out: "0\n"},
			{cmd: "sudo -n true && whoami", out: "hotaisle\n"},
			{cmd: "test -d /run/systemd/system"},
			{cmd: "command -v systemctl", out: "/usr/bin/systemctl\n"},
			{cmd: "false; echo a && echo b || echo c", out: "a\nb\n"},
			{cmd: "false && echo no || echo yes", out: "yes\n"},
			{cmd: "mkdir -p /opt/agent", exit: 1, errHas: "Permission denied"},
			{cmd: "sudo mkdir -p /opt/agent/bin && test -d /opt/agent/bin && echo ok", out: "ok\n"},
			{cmd: "sudo echo hi > /etc/motd", exit: 1, errHas: "cannot create /etc/motd: Permission denied"},
			{cmd: `sudo sh -c 'echo hi > /etc/motd' && cat /etc/motd`, out: "hi\n"},
			{cmd: "sudo tee /etc/agent.env > /dev/null", stdin: "A=1\n"},
			{cmd: "cat /etc/agent.env", out: "A=1\n"},
			{cmd: "cat > notes.txt && cat ~/notes.txt", stdin: "note\n", out: "note\n"},
			{cmd: "echo one | tee -a notes.txt >/dev/null; cat notes.txt", out: "note\none\n"},
			{cmd: "cat /nope", exit: 1, errHas: "No such file or directory"},
			{cmd: "curl -fsSL -o /tmp/dl https://example.com/x && test -f /tmp/dl && test ! -x /tmp/dl"},
			{cmd: "chmod +x /tmp/dl && test -x /tmp/dl && mv /tmp/dl /tmp/dl2 && test ! -e /tmp/dl && echo moved", out: "moved\n"},
			{cmd: "wget -qO- https://example.com/y", out: "sim download of https://example.com/y\n"},
			{cmd: "curl -o /usr/local/bin/x https://example.com/x", exit: 23},
			{cmd: "frobnicate --now", exit: 127, errHas: "frobnicate: command not found"},
			{cmd: "sudo frobnicate", exit: 127, errHas: "command not found"},
			{cmd: "sudo A=1 env B=2 id -u", out: "0\n"},
			{cmd: "X=1; echo $X ${X}2 $?", out: "1 12 0\n"},
			{cmd: "echo $(echo inner) `echo tick`", out: "inner tick\n"},
			{cmd: "set -e; false; echo not reached", exit: 1},
			{cmd: `sh -s`, stdin: "echo from stdin\nexit 3\necho no\n", out: "from stdin\n", exit: 3},
			{cmd: "sudo bash -c 'id -u; echo $HOME'", out: "0\n/root\n"},
			{cmd: "echo err 1>&2 2>/dev/null", errHas: "err"},
			{cmd: "printf '%s=%s\\n' a 1 b 2", out: "a=1\nb=2\n"},
			{cmd: "if test -d /tmp; then echo dir; else echo no; fi", out: "dir\n"},
			{cmd: "cat <<EOF\nhi $USER\nEOF", out: "hi hotaisle\n"},
			{cmd: "cat <<EOF", exit: 2, errHas: "syntax error: unclosed here-document"},
			{cmd: "echo 'open", exit: 2, errHas: "syntax error"},
			{cmd: "echo a &&", exit: 2, errHas: "syntax error"},
			{cmd: "sleep 30 && echo slept", out: "slept\n"},
		}
		for _, tc := range cases {
			start := time.Now()
			out, errOut, exit := run(t, c, tc.cmd, tc.stdin)
			assert.Equal(t, tc.exit, exit, "%s: stderr %q", tc.cmd, errOut)
			assert.Equal(t, tc.out, out, tc.cmd)
			assert.Contains(t, errOut, tc.errHas, tc.cmd)
			if tc.cmd == "sleep 30 && echo slept" {
				assert.Equal(t, 30*time.Second, time.Since(start), "sleep uses the clock")
			}
		}
		recs := h.Commands()
		require.Len(t, recs, len(cases))
		for i, tc := range cases {
			r := recs[i]
			assert.Equal(t, tc.cmd, r.Command)
			assert.Equal(t, tc.exit, r.Exit, tc.cmd)
			assert.Equal(t, tc.out, r.Stdout, tc.cmd)
			assert.Equal(t, "hotaisle", r.User)
			assert.False(t, r.Detached)
		}
		assert.Equal(t, "A=1\n", string(recs[16].Stdin), "consumed stdin is recorded")
		assert.Empty(t, recs[0].Stdin)
		data, ok := h.ReadFile("/home/hotaisle/notes.txt")
		assert.True(t, ok)
		assert.Equal(t, "note\none\n", string(data))
	})
}

func TestSSHExecWithoutSystemdAndRefusedRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		key := testSigner(t, "a")
		h := n.AddHost(HostConfig{Addr: "203.0.113.21:22", User: "root", AuthorizedKeys: authorized(key), NoSystemd: true})
		c := mustDial(t, n, h, key)
		defer c.Close()
		for cmd, want := range map[string]int{"test -d /run/systemd/system": 1, "command -v systemctl": 1,
			"systemctl start dstack-shim": 127, "mkdir -p /opt/x && echo ok > /etc/x": 0} {
			_, errOut, exit := run(t, c, cmd, "")
			assert.Equal(t, want, exit, "%s: %s", cmd, errOut)
		}
		h.SetSystemd(true)
		_, _, exit := run(t, c, "test -d /run/systemd/system", "")
		assert.Equal(t, 0, exit)

		s, err := c.NewSession()
		require.NoError(t, err)
		assert.Error(t, s.RequestPty("xterm", 40, 80, nil), "pty-req is refused")
		assert.Error(t, s.Shell(), "shell is refused")
		s.Close()
	})
}

func TestSSHScriptedOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		key := testSigner(t, "a")
		h := n.AddHost(HostConfig{Addr: "203.0.113.22:22", User: "hotaisle", AuthorizedKeys: authorized(key)})
		c := mustDial(t, n, h, key)
		defer c.Close()
		install := `sudo sh -c 'mkdir -p /opt/a && curl -fsSL -o /opt/a/bin https://x.example/bin && chmod +x /opt/a/bin'`

		var seen []string
		h.OnCommand("curl", func(cmd string, stdin []byte) (string, string, int) {
			seen = append(seen, cmd)
			return "", "curl: (22) The requested URL returned error: 403\n", 22
		})
		_, errOut, exit := run(t, c, install, "")
		assert.Equal(t, 22, exit)
		assert.Equal(t, "curl: (22) The requested URL returned error: 403\n", errOut)
		assert.Equal(t, []string{"curl -fsSL -o /opt/a/bin https://x.example/bin"}, seen, "unwrapped from sudo sh -c")
		_, ok := h.ReadFile("/opt/a/bin")
		assert.False(t, ok, "the chain stopped at curl")

		// A later, counted rule wins until it is used up; then the older rule applies.
		h.FailCommand("curl", 2, "curl: (56) Recv failure: Connection reset by peer\n", 56)
		for _, want := range []int{56, 56, 22} {
			_, _, exit = run(t, c, install, "")
			assert.Equal(t, want, exit)
		}

		h.OnCommand("echo scripted", func(cmd string, stdin []byte) (string, string, int) { return "", "no\n", 4 })
		_, errOut, exit = run(t, c, "echo scripted builtin", "")
		assert.Equal(t, 4, exit, "a builtin can be scripted too")
		assert.Equal(t, "no\n", errOut)

		h.OnCommandFunc(func(cmd string) bool { return strings.HasPrefix(cmd, "docker ") },
			func(cmd string, stdin []byte) (string, string, int) { return "got " + string(stdin), "", 0 })
		out, _, exit := run(t, c, "sudo docker login --password-stdin", "secret")
		assert.Equal(t, 0, exit)
		assert.Equal(t, "got secret", out)
		recs := h.Commands()
		assert.Equal(t, "secret", string(recs[len(recs)-1].Stdin))
	})
}
