package sshhost

// The agent binary and the process commands: kill, pgrep, pkill, disown.

import (
	"path"
	"strconv"
	"strings"
)

// agent runs the agent binary. In the foreground it blocks until the agent
// dies or the session ends (tied to the session). In a background job it
// returns at once, and what the agent holds decides, as for sshd: while its
// stdout or stderr is the session's, it holds the session open (tied: the
// exec ends when it dies, and it dies when the session closes, as a process
// writing to the closed channel would of SIGPIPE); with both redirected
// away (a file, /dev/null) it is detached and survives the session and the
// connection. nohup, setsid and disown change nothing there: without a
// terminal nohup redirects nothing. A launch while the agent runs is
// counted and exits 1 ("address already in use").
func (c *call) agent() int {
	x, h := c.sh.x, c.sh.x.h
	p, f := h.lookPath(c.absArg(c.args[0]))
	switch {
	case f == nil:
		c.errf("sh: %s: command not found\n", c.args[0])
		return 127
	case !f.exec:
		c.errf("sh: %s: Permission denied\n", p)
		return 126
	}
	spec := h.agentSpec()
	cmdline := strings.Join(append([]string{p}, c.args[1:]...), " ")
	detached := c.bgPID != 0 && !holdsSession(c.stdout) && !holdsSession(c.stderr)
	proc, started := h.launchAgent(detached, "", c.sh.root, cmdline, c.bgPID)
	if started && detached {
		x.detached.Store(true)
	} else if started {
		x.sess.tie(proc)
	}
	if !started {
		c.errf("listen tcp 127.0.0.1:%d: bind: address already in use\n", spec.Port)
		return 1
	}
	if c.bgPID != 0 {
		return 0
	}
	select {
	case <-c.ctx.Done():
		h.stopAgent(proc) // killed with its session, or by timeout
		return 143
	case <-proc.dead:
		return 143 // SIGTERM
	}
}

// progDisown drops jobs from the shell's job table; it closes no file
// descriptor, so an agent holding the session's output still holds it.
func progDisown(*call) int { return 0 }

// procMatch returns the running agent when pattern selects it (by name, or
// by command line with -f).
func (c *call) procMatch(full bool, pattern string) *agentProc {
	h := c.sh.x.h
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.proc
	if p == nil || pattern == "" {
		return nil
	}
	subject := path.Base(strings.Fields(p.cmdline)[0])
	if full {
		subject = p.cmdline
	}
	if strings.Contains(subject, pattern) {
		return p
	}
	return nil
}

func pgrepArgs(args []string) (full bool, pattern string) {
	for _, a := range args[1:] {
		switch {
		case a == "-f":
			full = true
		case strings.HasPrefix(a, "-"):
		default:
			pattern = a
		}
	}
	return full, pattern
}

// progPgrep is pgrep [-f] PATTERN: the agent's pid when it matches.
func progPgrep(c *call) int {
	p := c.procMatch(pgrepArgs(c.args))
	if p == nil {
		return 1
	}
	c.outf("%d\n", p.pid)
	return 0
}

// progPkill is pkill [-f] [-SIGNAL] PATTERN (a substring).
func progPkill(c *call) int {
	p := c.procMatch(pgrepArgs(c.args))
	if p == nil {
		return 1
	}
	if p.root && !c.sh.root {
		c.errf("pkill: killing pid %d failed: Operation not permitted\n", p.pid)
		return 3
	}
	c.sh.x.h.stopAgent(p)
	return 0
}

// progKill is kill [-0|-SIGNAL|-s SIGNAL] PID...: -0 tests that the
// agent's pid lives; other signals stop it.
func progKill(c *call) int {
	probe := false
	var pids []string
	for i := 1; i < len(c.args); i++ {
		switch a := c.args[i]; {
		case a == "-0":
			probe = true
		case a == "-s" || a == "-n":
			i++
		case a == "-l":
			c.outf("HUP INT QUIT ILL TRAP ABRT BUS FPE KILL USR1 SEGV USR2 PIPE ALRM TERM\n")
			return 0
		case strings.HasPrefix(a, "-") && len(a) > 1 && len(pids) == 0:
		default:
			pids = append(pids, a)
		}
	}
	if len(pids) == 0 {
		c.errf("sh: kill: usage: kill [-s sigspec | -n signum | -sigspec] pid ...\n")
		return 2
	}
	h := c.sh.x.h
	status := 0
	for _, s := range pids {
		pid, _ := strconv.Atoi(strings.TrimSpace(s))
		h.mu.Lock()
		p := h.proc
		h.mu.Unlock()
		switch {
		case p == nil || p.pid != pid:
			c.errf("sh: kill: (%s) - No such process\n", s)
			status = 1
		case p.root && !c.sh.root:
			c.errf("sh: kill: (%s) - Operation not permitted\n", s)
			status = 1
		case !probe:
			h.stopAgent(p)
		}
	}
	return status
}
