package sshhost

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The shell is bash: control flow, functions, here-documents, pipelines
// (which run one side after the other, so a sleep in one advances the
// bubble's clock), traps, eval and source, globs over the host's files.
func TestSSHShellLanguage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		key := testSigner(t, "a")
		h := n.AddHost(HostConfig{Addr: "203.0.113.40:22", InstanceID: "vm-40", User: "hotaisle", AuthorizedKeys: authorized(key)})
		c := mustDial(t, n, h, key)
		defer c.Close()
		h.WriteFile("/home/hotaisle/lib.sh", []byte("greet() { echo hello $1; }\nFROM=lib\n"), false)
		cases := []struct {
			cmd, stdin, out string
			exit            int
		}{
			{cmd: "for i in 1 2 3; do echo $i; done", out: "1\n2\n3\n"},
			{cmd: "i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i", out: "3\n"},
			{cmd: "case abc in a*) echo A;; *) echo B;; esac", out: "A\n"},
			{cmd: "if [[ -d /tmp && ! -e /nope ]]; then echo yes; elif true; then echo no; fi", out: "yes\n"},
			{cmd: "f() { local x=$1; echo \"f:$x\"; return 3; }; f a; echo $?", out: "f:a\n3\n"},
			{cmd: "cat <<'EOF'\n$HOME stays\nEOF\ncat <<EOF\n$HOME\nEOF", out: "$HOME stays\n/home/hotaisle\n"},
			{cmd: "read a b <<< 'x y'; echo $b$a", out: "yx\n"},
			{cmd: "printf 'l1\\nl2\\n' > f; while read l; do echo got $l; done < f", out: "got l1\ngot l2\n"},
			{cmd: ". ./lib.sh; greet you; echo $FROM; source lib.sh", out: "hello you\nlib\n"},
			{cmd: "trap 'echo bye' EXIT; echo hi", out: "hi\nbye\n"},
			{cmd: "trap -- '[[ -x /bin/sh ]] || echo no-sh' EXIT", out: "no-sh\n"},
			{cmd: "( exit 3 ); echo $? ${NOPE:-default} ${#HOME}", out: "3 default 14\n"},
			{cmd: "set -e; false | true; echo survives; true | false; echo not reached", out: "survives\n", exit: 1},
			{cmd: "set -o pipefail; false | true", exit: 1},
			{cmd: "echo a | cat | cat; echo $(echo sub | cat)", out: "a\nsub\n"},
			{cmd: "cat | sh -s", stdin: "echo from stdin\n", out: "from stdin\n"},
			{cmd: "sleep 5 | cat; { sleep 5; echo late; } | cat", out: "late\n"},
			{cmd: "mkdir -p d/e && touch d/e/f d/g && echo d/* d/*/*", out: "d/e d/g d/e/f\n"},
			{cmd: "eval 'x=1; echo $((x+1))'", out: "2\n"},
			{cmd: "export A=1; B=2; sh -c 'echo [$A$B]'; env C=3 bash -c 'echo $C'", out: "[1]\n3\n"},
			{cmd: "timeout 5 sleep 60; echo $?", out: "124\n"},
			{cmd: "command -v sh curl sha256sum echo nope", out: "/usr/bin/sh\n/usr/bin/curl\n/usr/bin/sha256sum\necho\n", exit: 1},
			{cmd: "type -t cd; /usr/bin/echo via path; /bin/uname -m", out: "builtin\nvia path\nx86_64\n"},
			{cmd: "echo err >&2; echo err2 > /dev/stderr; echo x > /dev/null", out: ""},
			{cmd: "sudo install -m 0755 -D lib.sh /opt/x/bin && test -x /opt/x/bin && [ -f /opt/x/bin ] && echo ok", out: "ok\n"},
			{cmd: "[[ -w /etc ]] || echo user; sudo bash -c '[[ -w /etc ]] && echo root'", out: "user\nroot\n"},
			{cmd: "test 1 -lt 2 -a \\( abc = abc -o x = y \\) && [ ! -z x ]", out: ""},
			{cmd: "cat <(echo x)", exit: 2},
			{cmd: "cd /tmp", exit: 1},
			{cmd: "echo ~ ~root ~hotaisle/x ~nobody", out: "/home/hotaisle /root /home/hotaisle/x ~nobody\n"},
		}
		start := time.Now()
		for _, tc := range cases {
			out, errOut, exit := run(t, c, tc.cmd, tc.stdin)
			assert.Equal(t, tc.exit, exit, "%s: stderr %q", tc.cmd, errOut)
			assert.Equal(t, tc.out, out, tc.cmd)
		}
		assert.Equal(t, 15*time.Second, time.Since(start), "sleeps in pipelines and under timeout use the clock")
	})
}

// The dstack-shim download step, checksum included, as the shim sends it:
// the digest of DownloadContent passes and installs the binary; a wrong
// digest fails with sha256sum's FAILED line and leaves nothing installed.
func TestSSHShellChecksumStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		key := testSigner(t, "a")
		h := n.AddHost(HostConfig{Addr: "203.0.113.41:22", User: "hotaisle", AuthorizedKeys: authorized(key)})
		c := mustDial(t, n, h, key)
		defer c.Close()
		url := "https://dstack-runner-downloads.example/0.19.41/binaries/dstack-shim-linux-amd64"
		sum := sha256.Sum256(DownloadContent(url))
		step := func(digest string) string {
			tmp := "/usr/local/bin/dstack-shim.download"
			return `sudo -n sh -c 'curl -fsS --compressed --connect-timeout 60 --max-time 240 --retry 1 -o ` + tmp + ` '\''` + url +
				`'\'' && echo '\''` + digest + `  ` + tmp + `'\'' | sha256sum -c - && chmod +x ` + tmp + ` && mv -f ` + tmp + ` /usr/local/bin/dstack-shim'`
		}

		out, errOut, exit := run(t, c, step(strings.Repeat("0", 64)), "")
		assert.Equal(t, 1, exit)
		assert.Equal(t, "/usr/local/bin/dstack-shim.download: FAILED\n", out)
		assert.Equal(t, "sha256sum: WARNING: 1 computed checksum did NOT match\n", errOut)
		_, ok := h.ReadFile("/usr/local/bin/dstack-shim")
		assert.False(t, ok, "a wrong digest installs nothing")

		out, errOut, exit = run(t, c, step(hex.EncodeToString(sum[:])), "")
		require.Equal(t, 0, exit, errOut)
		assert.Equal(t, "/usr/local/bin/dstack-shim.download: OK\n", out)
		data, ok := h.ReadFile("/usr/local/bin/dstack-shim")
		require.True(t, ok)
		assert.Equal(t, DownloadContent(url), data)
		out, _, exit = run(t, c, "test -x /usr/local/bin/dstack-shim && sha256sum /usr/local/bin/dstack-shim", "")
		assert.Equal(t, 0, exit)
		assert.Equal(t, hex.EncodeToString(sum[:])+"  /usr/local/bin/dstack-shim\n", out)
	})
}

// No command reads or writes the process's own files or starts a
// process: a real file is invisible, a write lands in the host's memory.
func TestSSHShellStaysInMemory(t *testing.T) {
	real := filepath.Join(t.TempDir(), "real.txt")
	require.NoError(t, os.WriteFile(real, []byte("real content\n"), 0o755))
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 1)
		defer n.Close()
		key := testSigner(t, "a")
		h := n.AddHost(HostConfig{Addr: "203.0.113.42:22", User: "root", AuthorizedKeys: authorized(key)})
		c := mustDial(t, n, h, key)
		defer c.Close()
		for _, p := range []string{"/etc/hostname", real} {
			for _, cmd := range []string{"cat P", "read x < P", "echo \"$(< P)\"; false", ". P", "sh P",
				"test -e P", "test -r P", "[[ -x P || -f P ]]", "ls P", "command -v P", "P", "exec P",
				"echo P* | grep -q real", "cp P /tmp/copy && cat /tmp/copy", "sha256sum P", "cd P/.."} {
				cmd = strings.ReplaceAll(cmd, "P", p)
				out, _, exit := run(t, c, cmd, "")
				assert.NotContains(t, out, "real content", cmd)
				assert.NotContains(t, out, strings.TrimSpace(readOr(p)), cmd)
				assert.NotEqual(t, 0, exit, cmd)
			}
		}
		written := filepath.Join(filepath.Dir(real), "written.txt")
		for _, cmd := range []string{"mkdir -p D && echo x > W", "echo x | tee W", "touch W"} {
			cmd = strings.NewReplacer("D", filepath.Dir(real), "W", written).Replace(cmd)
			_, errOut, exit := run(t, c, cmd, "")
			require.Equal(t, 0, exit, errOut)
		}
		data, ok := h.ReadFile(written)
		assert.True(t, ok)
		assert.Equal(t, "x\n", string(data), "written in the host's memory")
		_, err := os.Stat(written)
		assert.ErrorIs(t, err, os.ErrNotExist, "not on the process's disk")
		_, _, exit := run(t, c, "cat <(echo leak)", "")
		assert.Equal(t, 2, exit, "process substitution would make a FIFO on disk")
	})
}

func readOr(p string) string {
	data, err := os.ReadFile(p)
	if err != nil || len(strings.TrimSpace(string(data))) == 0 {
		return "\x00unreadable"
	}
	return string(data)
}

// $! is the pid of the agent a background job starts, so a pid file holds
// the agent's pid; with its output redirected away it is detached, and
// disown keeps it so.
func TestSSHShellBackgroundPIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, h, _, c := agentHost(t, "root")
		defer n.Close()
		defer c.Close()
		out, errOut, exit := run(t, c, "dstack-shim >/dev/null 2>&1 & pid=$!; disown; echo $pid; kill -0 $pid && pgrep dstack-shim", "")
		require.Equal(t, 0, exit, errOut)
		lines := strings.Fields(out)
		require.Len(t, lines, 2)
		assert.Equal(t, lines[0], lines[1], "$! is the agent's pid")
		assert.True(t, h.AgentDetached())
		recs := h.Commands()
		assert.True(t, recs[len(recs)-1].Detached)

		pid, err := strconv.Atoi(lines[0])
		require.NoError(t, err)
		out, _, exit = run(t, c, "kill "+lines[0]+"; kill -0 "+lines[0], "")
		assert.Equal(t, 1, exit, out)
		assert.False(t, h.AgentRunning())

		out, _, exit = run(t, c, "echo $$; sleep 600 & echo $!; wait $!; echo $?", "")
		assert.Equal(t, 0, exit)
		f := strings.Fields(out)
		require.Len(t, f, 3)
		assert.NotEqual(t, f[0], f[1])
		later, _ := strconv.Atoi(f[1])
		assert.Greater(t, later, pid, "pids grow")
	})
}

// With the real clock: a command cut by the closing session, a foreground
// agent, background jobs, pipelines and timeouts leave no goroutine.
func TestSSHShellLeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	n := NewNetwork(nil, 1)
	defer n.Close()
	key := testSigner(t, "a")
	h := n.AddHost(HostConfig{Addr: "203.0.113.43:22", User: "root", AuthorizedKeys: authorized(key)})
	c := mustDial(t, n, h, key)
	defer c.Close()
	installAgent(t, c)
	out, _, exit := run(t, c, "timeout 0.01 sleep 60; echo $?; echo a | cat | sha256sum | cat >/dev/null; sleep 60 & (sleep 60 &); wait; printf '%s\\n' x y > f; while read l; do :; done < f; cat <<EOF\nhere\nEOF", "")
	assert.Equal(t, 0, exit)
	assert.Equal(t, "124\nhere\n", out)
	for _, cmd := range []string{"sleep 3600", "dstack-shim", "cat"} {
		s, err := c.NewSession()
		require.NoError(t, err)
		require.NoError(t, s.Start(cmd))
		require.Eventually(t, func() bool { return len(h.Commands()) > 0 && h.Commands()[len(h.Commands())-1].Command == cmd },
			5*time.Second, time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		_ = s.Close()
	}
	c.Close()
	require.NoError(t, n.Close())
	require.Eventually(t, func() bool { return !h.AgentRunning() }, 5*time.Second, time.Millisecond)
	recs := h.Commands()
	for _, r := range recs[len(recs)-3 : len(recs)-1] {
		assert.Equal(t, -1, r.Exit, "%s was cut by its session", r.Command)
	}
}
