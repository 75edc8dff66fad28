package sshhost

// The commands of the fake hosts, for everything that is not a shell
// builtin (the interpreter runs those: echo, printf, read, set, export,
// exit, [[ ]], ...). A command line is resolved in this order:
//
//	wrappers    sudo [-n -E -H -u U] CMD (root; HOME=/root), env [-i] [-u N] [N=v] [CMD],
//	            N=v CMD, nohup CMD, setsid [-f] CMD, timeout DUR CMD (the host's clock;
//	            exit 124), nice [-n N] CMD, exec CMD, command [-p|-v|-V] CMD
//	shells      sh|bash|dash [-eux] [-o OPT] (-c SCRIPT [NAME ARGS] | -s | FILE ARGS)
//	scripted    a Host.OnCommand or FailCommand outcome matching the command
//	the agent   the agent binary (a path, or in /usr/local/sbin:/usr/local/bin:/usr/sbin:
//	            /usr/bin:/sbin:/bin; it must exist and be executable), see ssh_agent.go
//	programs    files: mkdir [-p] chmod MODE chown chgrp chcon mv cp rm [-rf] touch cat
//	            tee [-a] install [-d] [-D] [-m MODE] ln (copies);
//	            system: uname [-m|-s|-r|-a] id [-u|-un] whoami hostname(=instance id)
//	            sleep (the host's clock) mktemp [-d] which test [ kill [-0|-SIG] pgrep
//	            [-f] pkill [-f] disown cd pushd popd umask ulimit type;
//	            network: curl [-fsSL] [-o FILE|-O] URL, wget [-q] [-O FILE|-O -] URL,
//	            sha256sum [-c] [FILE|-] (DownloadContent is what any URL serves;
//	            http://localhost:<agent port>/... asks the agent);
//	            systemctl (with systemd only: see sshhost_systemd.go)
//	builtins    echo, printf, true, false, pwd and the rest run as the shell's builtins
//	files       an executable file of the host: a "#!" script of sh or bash runs, any
//	            other file runs and does nothing; else 127 "command not found"
//
// Redirections use the shell's privileges, so `sudo echo x > /etc/f` fails
// as it does for real; use `echo x | sudo tee /etc/f` or `sudo sh -c '…'`.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/interp"
)

// call is one command the host runs.
type call struct {
	sh     shellEnv // root changes under sudo
	ctx    context.Context
	hc     interp.HandlerContext
	args   []string
	env    map[string]string // set by sudo, env and NAME=value
	unset  map[string]bool   // env -u
	clear  bool              // env -i
	stdin  io.Reader         // nil: the session's stdin
	stdout io.Writer
	stderr io.Writer
	bgPID  int // the background job's pid; 0 in the foreground

	builtinErr error // what a shell builtin run by run returned
}

type program func(c *call) int

var programs, wrappers map[string]program

func init() {
	wrappers = map[string]program{"sudo": wrapSudo, "env": wrapEnv, "nohup": wrapNohup, "setsid": wrapSetsid,
		"timeout": wrapTimeout, "nice": wrapNice, "exec": wrapExec, "command": wrapCommand}
	programs = map[string]program{
		"mkdir": progMkdir, "chmod": progChmod, "chown": progChown, "chgrp": progChown, "chcon": progNoop,
		"mv": progMove, "cp": progMove, "ln": progMove, "install": progInstall, "rm": progRm, "touch": progTouch,
		"cat": progCat, "tee": progTee,
		"uname": progUname, "id": progID, "whoami": progWhoami, "hostname": progHostname, "sleep": progSleep,
		"mktemp": progMktemp, "which": progWhich, "type": progType, "test": progTest, "[": progTest,
		"kill": progKill, "pgrep": progPgrep, "pkill": progPkill, "disown": progDisown,
		"cd": progCd, "pushd": progCd, "popd": progCd, "umask": progUmask, "ulimit": progUlimit,
		"curl": progCurl, "wget": progWget, "sha256sum": progSha256sum, "systemctl": progSystemctl,
		"fork": progFork, "refuse": progRefuse, "testp": progTestPrint,
	}
}

// alsoPrograms are builtins that also exist as programs in /usr/bin.
var alsoPrograms = map[string]bool{"echo": true, "printf": true, "true": true, "false": true,
	"pwd": true, "sh": true, "bash": true, "dash": true}

// execHandler is the interpreter's exec handler: every simple command that
// is not a builtin or a function.
func (sh shellEnv) execHandler(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	c := &call{sh: sh, ctx: ctx, hc: hc, args: args, stdout: hc.Stdout, stderr: hc.Stderr}
	if hc.Stdin != nil {
		c.stdin = hc.Stdin
	}
	if v := hc.Env.Get(varBgPID); v.IsSet() {
		c.bgPID, _ = strconv.Atoi(v.String())
	}
	st := c.run()
	if st == builtinRan {
		return c.builtinErr
	}
	if st == 0 {
		return nil
	}
	return interp.ExitStatus(uint8(max(st, 0)))
}

// builtinRan is run's answer when a shell builtin ran; its error is in
// call.builtinErr.
const builtinRan = -1000

// run resolves and runs the command (see the list above).
func (c *call) run() int {
	for len(c.args) > 0 && isAssignment(c.args[0]) {
		k, v, _ := strings.Cut(c.args[0], "=")
		c.setEnv(k, v)
		c.args = c.args[1:]
	}
	if len(c.args) == 0 {
		return 0
	}
	if c.args[0] == internal+"rule" { // a builtin with a scripted outcome
		c.args = c.args[1:]
	} else if n, ok := strings.CutPrefix(c.args[0], internal); ok {
		c.args[0] = n
	}
	h := c.sh.x.h
	name := c.args[0]
	if strings.Contains(name, "/") { // a file of the host, or a program in a bin directory
		p := c.file(name)
		name = path.Base(p)
		switch _, f := h.lookPath(p); {
		case f != nil && name == h.agentSpec().Binary:
			return c.agent()
		case f != nil || !slices.Contains(binDirs, path.Dir(p)) || !inUsrBin(name):
			return c.external()
		}
	}
	if w := wrappers[name]; w != nil {
		return w(c)
	}
	switch name {
	case "sh", "bash", "dash":
		return c.shell()
	}
	if handler := h.rule(strings.Join(c.args, " ")); handler != nil {
		return c.scripted(handler)
	}
	if name == h.agentSpec().Binary {
		return c.agent()
	}
	if p := programs[name]; p != nil && c.available(name) {
		return p(c)
	}
	if interp.IsBuiltin(name) {
		c.builtinErr = c.hc.Builtin(c.ctx, append([]string{name}, c.args[1:]...))
		return builtinRan
	}
	return c.external()
}

// available reports whether a program exists on the host (systemctl only
// with systemd).
func (c *call) available(name string) bool {
	if name == "systemctl" {
		h := c.sh.x.h
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.systemd
	}
	return true
}

func (c *call) setEnv(k, v string) {
	if c.env == nil {
		c.env = map[string]string{}
	}
	c.env[k] = v
	delete(c.unset, k)
}

// input is the command's stdin: a pipe or file, the session's stdin, or
// nothing in a background job.
func (c *call) input() io.Reader {
	switch {
	case c.stdin != nil:
		return c.stdin
	case c.bgPID != 0:
		return strings.NewReader("")
	}
	return c.sh.x.stdin
}

func (c *call) errf(format string, a ...any) { fmt.Fprintf(c.stderr, format, a...) }

func (c *call) outf(format string, a ...any) { fmt.Fprintf(c.stdout, format, a...) }

// scripted runs a scripted outcome.
func (c *call) scripted(handler CommandHandler) int {
	var stdin []byte
	if c.stdin != nil || c.bgPID == 0 {
		stdin, _ = io.ReadAll(c.input())
	}
	out, errOut, status := handler(strings.Join(c.args, " "), stdin)
	io.WriteString(c.stdout, out)
	io.WriteString(c.stderr, errOut)
	return status
}

// shell runs sh/bash/dash: -c SCRIPT [NAME ARGS...], a script FILE [ARGS],
// or the script on stdin (no operand, or -s).
func (c *call) shell() int {
	args := c.args[1:]
	var flags []string
	cmdMode, stdinMode := false, false
	for len(args) > 0 && len(args[0]) > 1 && (args[0][0] == '-' || args[0][0] == '+') {
		a := args[0]
		args = args[1:]
		switch {
		case a == "--":
		case strings.HasPrefix(a, "--"): // --login, --norc, --noprofile
			continue
		case a == "-o" || a == "+o":
			if len(args) > 0 {
				flags, args = append(flags, a, args[0]), args[1:]
			}
			continue
		default:
			for _, ch := range a[1:] {
				switch ch {
				case 'c':
					cmdMode = true
				case 's':
					stdinMode = true
				case 'l', 'i', 'p':
				default:
					flags = append(flags, string(a[0])+string(ch))
				}
			}
			continue
		}
		break
	}
	r := shellRun{name: path.Base(c.args[0]), flags: flags, dir: c.hc.Dir, stdout: c.stdout, stderr: c.stderr,
		env: environ(c.hc.Env, c.env, c.unset, c.clear, c.bgPID)}
	if f, ok := c.stdin.(*os.File); ok {
		r.stdin = f
	}
	switch {
	case cmdMode && len(args) == 0:
		c.errf("%s: -c: option requires an argument\n", r.name)
		return 2
	case cmdMode:
		r.src, args = args[0], args[1:]
		if len(args) > 0 {
			r.name, args = args[0], args[1:]
		}
	case !stdinMode && len(args) > 0:
		data, err := c.sh.x.h.readFile(c.sh.absIn(c.hc.Dir, args[0]))
		if err != nil {
			c.errf("%s: %s: %v\n", r.name, args[0], err)
			return 127
		}
		r.src, r.name, args = string(data), args[0], args[1:]
	default:
		data, _ := io.ReadAll(c.input())
		r.src = string(data)
	}
	r.params = args
	return shellStatus(c.sh.run(c.ctx, r))
}

func shellStatus(st int) int {
	if st < 0 {
		return 130
	}
	return st
}

// external runs a file of the host: a "#!" script of sh or bash runs,
// another executable file runs and does nothing.
func (c *call) external() int {
	h := c.sh.x.h
	p, f := h.lookPath(c.absArg(c.args[0]))
	switch {
	case f == nil:
		c.errf("sh: %s: command not found\n", c.args[0])
		return 127
	case !f.exec:
		c.errf("sh: %s: Permission denied\n", p)
		return 126
	}
	data, _ := h.readFile(p)
	line, _, _ := strings.Cut(string(data), "\n")
	if interp, ok := strings.CutPrefix(line, "#!"); ok && strings.Contains(interp, "sh") {
		return shellStatus(c.sh.run(c.ctx, shellRun{src: string(data), name: c.args[0], params: c.args[1:],
			dir: c.hc.Dir, stdout: c.stdout, stderr: c.stderr, env: environ(c.hc.Env, c.env, c.unset, c.clear, c.bgPID)}))
	}
	return 0
}

// absArg makes a path argument absolute from the shell's directory (a
// name without '/' is left to PATH lookup).
func (c *call) absArg(p string) string {
	if !strings.Contains(p, "/") {
		return p
	}
	return c.sh.absIn(c.hc.Dir, p)
}

// file resolves a file operand from the shell's directory.
func (c *call) file(p string) string { return c.sh.absIn(c.hc.Dir, p) }

func isAssignment(s string) bool {
	k, _, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return false
	}
	for i, ch := range k {
		if !(ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || i > 0 && ch >= '0' && ch <= '9') {
			return false
		}
	}
	return true
}

// skipFlags drops leading flags; those in withArg take the next word.
func skipFlags(args []string, withArg ...string) []string {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		if args[0] == "--" {
			return args[1:]
		}
		takes := false
		for _, f := range withArg {
			takes = takes || args[0] == f
		}
		args = args[1:]
		if takes && len(args) > 0 {
			args = args[1:]
		}
	}
	return args
}

func sortedEnv(env []string) []string {
	out := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, internal) {
			out = append(out, kv)
		}
	}
	sort.Strings(out)
	return out
}
