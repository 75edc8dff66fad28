package sshhost

// System commands of the fake hosts: uname, id, whoami, hostname, sleep,
// mktemp, which, type, cd, umask, ulimit, and the internal fork and refuse.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

func progUname(c *call) int {
	out := "Linux"
	if len(c.args) > 1 {
		switch c.args[1] {
		case "-m", "-p", "-i":
			out = "x86_64"
		case "-r":
			out = "6.8.0-60-generic"
		case "-n":
			out = c.hostname()
		case "-a":
			out = "Linux " + c.hostname() + " 6.8.0-60-generic #63-Ubuntu SMP x86_64 x86_64 x86_64 GNU/Linux"
		}
	}
	c.outf("%s\n", out)
	return 0
}

func (c *call) user() (string, int) {
	if c.sh.root {
		return "root", 0
	}
	return c.sh.x.h.cfg.User, 1000
}

func progID(c *call) int {
	name, uid := c.user()
	switch strings.Join(c.args[1:], " ") {
	case "-u":
		c.outf("%d\n", uid)
	case "-un", "-u -n", "-nu", "-n -u":
		c.outf("%s\n", name)
	default:
		c.outf("uid=%d(%s) gid=%d(%s) groups=%d(%s)\n", uid, name, uid, name, uid, name)
	}
	return 0
}

func progWhoami(c *call) int {
	name, _ := c.user()
	c.outf("%s\n", name)
	return 0
}

func (c *call) hostname() string {
	if id := c.sh.x.h.cfg.InstanceID; id != "" {
		return id
	}
	return "sim"
}

func progHostname(c *call) int {
	c.outf("%s\n", c.hostname())
	return 0
}

// progSleep waits on the host's clock (seconds, or NUMBER[smhd]); in a
// background job it returns at once (jobs never block on a fake host).
func progSleep(c *call) int {
	if len(c.args) < 2 {
		c.errf("sleep: missing operand\n")
		return 1
	}
	var total float64
	for _, a := range c.args[1:] {
		d, ok := parseDuration(a)
		if !ok {
			c.errf("sleep: invalid time interval '%s'\n", a)
			return 1
		}
		total += float64(d)
	}
	if c.bgPID != 0 {
		return 0
	}
	if c.sh.x.h.net.clock.Sleep(c.ctx, time.Duration(total)) != nil {
		return 130
	}
	return 0
}

func progMktemp(c *call) int {
	p := fmt.Sprintf("/tmp/tmp.sim%06d", c.sh.x.h.newPID())
	var err error
	if len(c.args) > 1 && c.args[1] == "-d" {
		err = c.sh.x.h.mkdir(p, false, true)
	} else {
		err = c.sh.x.h.writeFile(p, nil, true, false)
	}
	if err != nil {
		c.errf("mktemp: %v\n", err)
		return 1
	}
	c.outf("%s\n", p)
	return 0
}

// progWhich prints where each program is (no builtins); exit 1 when one
// is absent.
func progWhich(c *call) int {
	status := 0
	for _, n := range skipFlags(c.args[1:]) {
		if where, _ := c.which(n, false); where != "" {
			c.outf("%s\n", where)
		} else {
			status = 1
		}
	}
	return status
}

// progType is the builtin type [-t|-p|-P] NAME...
func progType(c *call) int {
	mode := ""
	a := c.args[1:]
	for len(a) > 0 && strings.HasPrefix(a[0], "-") {
		mode, a = a[0], a[1:]
	}
	status := 0
	for _, n := range a {
		where, builtin := c.which(n, mode != "-P")
		switch {
		case where == "":
			if mode == "" {
				c.errf("sh: type: %s: not found\n", n)
			}
			status = 1
		case mode == "-t":
			c.outf("%s\n", map[bool]string{true: "builtin", false: "file"}[builtin])
		case mode == "-p" && builtin:
		case mode == "-p" || mode == "-P":
			c.outf("%s\n", where)
		case builtin:
			c.outf("%s is a shell builtin\n", n)
		default:
			c.outf("%s is %s\n", n, where)
		}
	}
	return status
}

// progCd is the builtin cd (and pushd, popd): the working directory stays
// the one the exec started in, so only that directory is accepted.
func progCd(c *call) int {
	target := c.sh.x.h.home()
	if len(c.args) > 1 {
		target = c.file(c.args[1])
	}
	info, ok := c.sh.x.h.stat(target)
	switch {
	case !ok:
		c.errf("sh: %s: %s: No such file or directory\n", c.args[0], argAt(c.args, 1))
		return 1
	case !info.IsDir():
		c.errf("sh: %s: %s: Not a directory\n", c.args[0], argAt(c.args, 1))
		return 1
	case target != c.hc.Dir:
		c.errf("sh: %s: %s: changing directory is not supported on this host (the directory stays %s)\n",
			c.args[0], argAt(c.args, 1), c.hc.Dir)
		return 1
	}
	return 0
}

func progUmask(c *call) int {
	if len(c.args) == 1 {
		c.outf("0022\n")
	}
	return 0
}

func progUlimit(c *call) int {
	if len(c.args) == 1 || len(c.args) == 2 && strings.HasPrefix(c.args[1], "-") {
		c.outf("unlimited\n")
	}
	return 0
}

// progFork gives a background job its pid (see sshhost_shell_guard.go).
func progFork(c *call) int {
	c.outf("%d\n", c.sh.x.fork())
	return 0
}

// progRefuse prints why the shell refused a command, exit 2.
func progRefuse(c *call) int {
	c.errf("sh: %s\n", strings.Join(c.args[1:], " "))
	return 2
}

// fork returns a pid for a new background job.
func (x *execState) fork() int { return x.h.newPID() }

func atoiPID(s string) (int, bool) {
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	return pid, err == nil && pid > 0
}
