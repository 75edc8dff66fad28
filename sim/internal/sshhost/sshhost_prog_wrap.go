package sshhost

// Wrapper commands: they change how the rest of the command line runs,
// then run it.

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// wrapSudo runs the command as root with root's HOME, USER and LOGNAME.
func wrapSudo(c *call) int {
	a := skipFlags(c.args[1:], "-u", "-g", "-C", "-D", "-p", "-h", "-U", "-r", "-t", "-T", "-R")
	if len(a) == 0 {
		c.errf("usage: sudo [-u user] command\n")
		return 1
	}
	c.sh.root = true
	for _, k := range []string{"USER", "LOGNAME"} {
		c.setEnv(k, "root")
	}
	c.setEnv("HOME", "/root")
	c.args = a
	return c.run()
}

// wrapEnv is env [-i] [-u NAME] [NAME=value]... [COMMAND]: without a
// command it prints the environment.
func wrapEnv(c *call) int {
	a := c.args[1:]
	for len(a) > 0 {
		switch {
		case a[0] == "-i" || a[0] == "-" || a[0] == "--ignore-environment":
			c.clear = true
		case a[0] == "-u" && len(a) > 1:
			if c.unset == nil {
				c.unset = map[string]bool{}
			}
			c.unset[a[1]] = true
			delete(c.env, a[1])
			a = a[1:]
		case a[0] == "--":
		case strings.HasPrefix(a[0], "-"):
		case isAssignment(a[0]):
			k, v, _ := strings.Cut(a[0], "=")
			c.setEnv(k, v)
		default:
			c.args = a
			return c.run()
		}
		a = a[1:]
	}
	for _, kv := range sortedEnv(environ(c.hc.Env, c.env, c.unset, c.clear, 0)) {
		c.outf("%s\n", kv)
	}
	return 0
}

// wrapNohup runs the command immune to hangups. Without a terminal it
// redirects nothing: an agent it starts in the background still holds the
// session while its output goes there (see call.agent).
func wrapNohup(c *call) int {
	if len(c.args) < 2 {
		c.errf("nohup: missing operand\n")
		return 125
	}
	c.args = c.args[1:]
	return c.run()
}

// wrapSetsid runs the command in a new session; with -f (--fork) in the
// background, with a pid of its own. A new session does not close the
// session's output: see call.agent.
func wrapSetsid(c *call) int {
	a := c.args[1:]
	fork := false
	for len(a) > 0 && strings.HasPrefix(a[0], "-") {
		fork = fork || a[0] == "-f" || a[0] == "--fork"
		a = a[1:]
	}
	if fork && c.bgPID == 0 {
		c.bgPID = c.sh.x.fork()
	}
	if len(a) == 0 {
		c.errf("setsid: no command specified\n")
		return 1
	}
	c.args = a
	if !fork {
		return c.run()
	}
	c.run() // in the background: setsid returns 0 at once
	return 0
}

// wrapTimeout is timeout [-s SIG] [-k DUR] DURATION COMMAND: the command is
// stopped after DURATION of the host's clock (exit 124).
func wrapTimeout(c *call) int {
	a := skipFlags(c.args[1:], "-s", "-k", "--signal", "--kill-after")
	if len(a) < 2 {
		c.errf("timeout: missing operand\n")
		return 125
	}
	d, ok := parseDuration(a[0])
	if !ok {
		c.errf("timeout: invalid time interval '%s'\n", a[0])
		return 125
	}
	c.args = a[1:]
	if d == 0 {
		return c.run()
	}
	parent := c.ctx
	ctx, cancel := context.WithCancel(parent)
	var fired atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		if c.sh.x.h.net.clock.Sleep(ctx, d) == nil {
			fired.Store(true)
			cancel()
		}
	}()
	c.ctx = ctx
	st := c.run()
	c.ctx = parent
	cancel()
	<-done
	if fired.Load() && parent.Err() == nil {
		return 124
	}
	return st
}

func wrapNice(c *call) int {
	c.args = skipFlags(c.args[1:], "-n", "--adjustment")
	return c.run()
}

func wrapExec(c *call) int {
	c.args = c.args[1:]
	return c.run()
}

// wrapCommand is command [-p] [-v|-V] NAME...: -v and -V say what NAME is;
// otherwise NAME runs.
func wrapCommand(c *call) int {
	a := c.args[1:]
	verbose, show := false, false
	for len(a) > 0 && strings.HasPrefix(a[0], "-") {
		switch a[0] {
		case "-v":
			show = true
		case "-V":
			show, verbose = true, true
		}
		a = a[1:]
	}
	if !show {
		c.args = a
		return c.run()
	}
	status := 0
	for _, n := range a {
		where, builtin := c.which(n, true)
		switch {
		case where == "":
			if verbose {
				c.errf("sh: command: %s: not found\n", n)
			}
			status = 1
		case verbose && builtin:
			c.outf("%s is a shell builtin\n", n)
		case verbose:
			c.outf("%s is %s\n", n, where)
		default:
			c.outf("%s\n", where)
		}
	}
	return status
}

// which says where name is: a shell builtin (when builtins count), a file
// of the host in PATH, or a program of the host (in /usr/bin); "" when
// absent.
func (c *call) which(name string, builtins bool) (where string, builtin bool) {
	if builtins && interp.IsBuiltin(name) {
		return name, true
	}
	h := c.sh.x.h
	if p, f := h.lookPath(c.absArg(name)); f != nil && f.exec {
		return p, false
	}
	if !strings.Contains(name, "/") && inUsrBin(name) && c.available(name) {
		return "/usr/bin/" + name, false
	}
	return "", false
}

// shellOnly are the host's versions of shell builtins that no program in
// /usr/bin backs.
var shellOnly = map[string]bool{"cd": true, "pushd": true, "popd": true, "umask": true, "ulimit": true,
	"type": true, "disown": true, "fork": true, "refuse": true, "testp": true}

func inUsrBin(name string) bool {
	return programs[name] != nil && !shellOnly[name] || wrappers[name] != nil || alsoPrograms[name]
}

// parseDuration reads sleep's and timeout's NUMBER[smhd].
func parseDuration(s string) (time.Duration, bool) {
	unit := time.Second
	switch {
	case strings.HasSuffix(s, "s"):
		s = s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		s, unit = s[:len(s)-1], time.Minute
	case strings.HasSuffix(s, "h"):
		s, unit = s[:len(s)-1], time.Hour
	case strings.HasSuffix(s, "d"):
		s, unit = s[:len(s)-1], 24*time.Hour
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return time.Duration(f * float64(unit)), true
}
