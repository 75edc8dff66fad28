package sim

// The fake hosts' shell. Each "exec" request is parsed by parseScript (see
// ssh_shell_parse.go for the grammar: ; && || | & newlines, quotes, $VAR,
// $?, $!, $(...), redirections > >> < 2>&1 &>; no if/for/while, no
// here-documents, no subshells) and run command by command. Commands:
//
//	wrappers    sudo [-n -E -H -u U] CMD, env [NAME=v] CMD, NAME=v CMD, nohup CMD,
//	            setsid [-f] CMD, exec CMD, timeout DUR CMD, command CMD
//	shells      sh|bash|dash -c 'SCRIPT' | -s (script on stdin) | FILE; -e, set -e
//	basics      true false : echo [-n] printf(%s %d \n) uname [-m|-s|-r|-a]
//	            id [-u|-un] whoami hostname(=instance id) export cd umask exit sleep(clock)
//	            test / [ ] (-d -f -e -x -s -n -z = != !) command -v which mktemp chcon
//	files       mkdir [-p] chmod MODE(x bit) chown mv cp rm [-rf] touch cat [FILE|-]
//	            tee [-a] FILE   (non-root: writes only under ~, /tmp, /var/tmp)
//	network     curl [-fsSL] [-o FILE|-O] URL, wget [-q] [-O FILE|-O -] URL: any URL
//	            downloads "sim download of URL\n"; http://localhost:<agent port>/…
//	            asks the agent (curl exit 7 if nothing listens, 22 with -f on >= 400)
//	systemd     systemctl daemon-reload|start|restart|try-restart|stop|enable [--now]|
//	            disable [--now]|is-active [-q]|is-enabled|status UNIT (mutating verbs
//	            need root; absent, like /run/systemd/system, without systemd)
//	processes   the agent binary (by path or in /usr/local/sbin:/usr/local/bin:
//	            /usr/sbin:/usr/bin:/sbin:/bin; must exist and be executable),
//	            pgrep [-f] PAT, pkill [-f] PAT, kill [-0] PID, disown
//
// Anything else: a scripted outcome (OnCommand) if one matches, a file on
// the host (runs, does nothing), else exit 127 "command not found".
// Redirections use the shell's privileges, so `sudo echo x > /etc/f` fails
// as it does for real; use `echo x | sudo tee /etc/f` or `sudo sh -c '…'`.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// shell interprets the language of ssh_shell_parse.go for one exec request.
type shell struct {
	h          *Host
	sess       *session
	ctx        context.Context
	root       bool // the shell runs as root (root login or `sudo sh -c`)
	bg, detach bool // inherited by a shell run in the background / under nohup or setsid
	vars       map[string]string
	status     int
	lastBg     int        // $!
	lastBgProc *agentProc // the agent started by the last "&", if any
	errexit    bool
	exited     bool
	depth      int
	detached   *bool // shared by nested shells: a detached agent was started
}

// stdio is a command's standard streams.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// cmdCtx is how a simple command runs once its wrappers are stripped.
type cmdCtx struct {
	root   bool // sudo, or a root shell
	bg     bool // in the background (&, setsid -f)
	detach bool // under nohup or setsid
}

func newShell(s *session, detached *bool) *shell {
	h := s.host
	sh := &shell{h: h, sess: s, ctx: s.ctx, root: h.cfg.User == "root", detached: detached,
		vars: map[string]string{"HOME": h.home(), "USER": h.cfg.User, "LOGNAME": h.cfg.User,
			"SHELL": "/bin/bash", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}
	for k, v := range s.env {
		sh.vars[k] = v
	}
	return sh
}

// child returns a nested shell (sh -c, $(...)) sharing the exec's state.
func (sh *shell) child(cc cmdCtx) *shell {
	c := *sh
	c.root, c.bg, c.detach = cc.root, cc.bg, cc.detach
	c.vars = make(map[string]string, len(sh.vars))
	for k, v := range sh.vars {
		c.vars[k] = v
	}
	if c.root {
		c.vars["HOME"], c.vars["USER"] = "/root", "root"
	}
	c.errexit, c.exited, c.lastBg, c.lastBgProc = false, false, 0, nil
	c.depth++
	return &c
}

// run parses and runs src; a syntax error exits 2 and runs nothing.
func (sh *shell) run(src string, std stdio) int {
	if sh.depth > 16 {
		fmt.Fprintln(std.err, "sh: too many nested shells")
		return 2
	}
	s, err := parseScript(src)
	if err != nil {
		fmt.Fprintf(std.err, "sh: 1: %v\n", err)
		return 2
	}
	for _, a := range s {
		if sh.exited || sh.ctx.Err() != nil {
			break
		}
		st, final := sh.runAndOr(a, std)
		sh.status = st
		if sh.errexit && st != 0 && final {
			sh.exited = true
		}
	}
	return sh.status
}

// runAndOr runs a && / || list; final reports whether its last pipeline ran
// (set -e only exits then). A background list returns 0 at once.
func (sh *shell) runAndOr(a andOr, std stdio) (status int, final bool) {
	last := -1
	for i, p := range a.pipes {
		if i > 0 && (a.ops[i-1] == "&&") != (status == 0) {
			continue
		}
		if sh.exited || sh.ctx.Err() != nil {
			break
		}
		status, last = sh.runPipeline(p, std, a.bg), i
	}
	if a.bg {
		return 0, false
	}
	return status, last == len(a.pipes)-1
}

func (sh *shell) runPipeline(p pipeline, std stdio, bg bool) int {
	in := std.in
	if bg {
		in = strings.NewReader("") // sh gives background jobs /dev/null
	}
	status := 0
	for i, c := range p {
		out := std.out
		var buf *bytes.Buffer
		if i < len(p)-1 {
			buf = new(bytes.Buffer)
			out = buf
		}
		status = sh.runSimple(c, stdio{in: in, out: out, err: std.err}, bg)
		if buf != nil {
			in = bytes.NewReader(buf.Bytes())
		}
	}
	return status
}

func (sh *shell) runSimple(c simpleCmd, std stdio, bg bool) int {
	args := make([]string, 0, len(c.words))
	for _, w := range c.words {
		args = append(args, sh.expand(w))
	}
	var assigns []string
	for len(args) > 0 && isAssignment(args[0]) {
		assigns, args = append(assigns, args[0]), args[1:]
	}
	if len(args) == 0 {
		for _, a := range assigns {
			k, v, _ := strings.Cut(a, "=")
			sh.vars[k] = v
		}
	}
	rstd, flush, err := sh.redirects(c.redirs, std)
	if err != nil {
		fmt.Fprintf(std.err, "sh: 1: %v\n", err)
		return 2
	}
	status := 0
	if len(args) > 0 {
		status = sh.command(args, rstd, cmdCtx{root: sh.root, bg: bg || sh.bg, detach: sh.detach})
	}
	flush()
	return status
}

// fileSink buffers a redirection's output, written to the file afterwards.
type fileSink struct {
	path string
	buf  bytes.Buffer
}

func (f *fileSink) Write(p []byte) (int, error) { return f.buf.Write(p) }

// redirects applies rs to std in order; files are created (with the
// shell's, not the command's, privileges) before the command runs.
func (sh *shell) redirects(rs []redirect, std stdio) (stdio, func(), error) {
	fds := map[int]io.Writer{1: std.out, 2: std.err}
	var sinks []*fileSink
	for _, r := range rs {
		target := sh.expand(r.target)
		switch r.op {
		case "<":
			data, err := sh.h.readFile(target)
			if err != nil {
				return std, nil, fmt.Errorf("cannot open %s: %v", target, err)
			}
			std.in = bytes.NewReader(data)
		case ">&":
			fds[r.fd] = fds[r.dupTo]
		default: // ">", ">>", "&>"
			var w io.Writer = io.Discard
			if target != "/dev/null" {
				if err := sh.h.writeFile(target, nil, sh.root, r.op == ">>"); err != nil {
					return std, nil, fmt.Errorf("cannot create %s: %v", target, err)
				}
				s := &fileSink{path: target}
				sinks, w = append(sinks, s), s
			}
			if r.op == "&>" {
				fds[1], fds[2] = w, w
			} else {
				fds[r.fd] = w
			}
		}
	}
	flush := func() {
		for _, s := range sinks {
			_ = sh.h.writeFile(s.path, s.buf.Bytes(), true, true)
		}
	}
	return stdio{in: std.in, out: fds[1], err: fds[2]}, flush, nil
}

func isAssignment(s string) bool {
	k, _, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return false
	}
	for i, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// expand gives a word's value: quotes removed, variables and command
// substitutions replaced (no field splitting, no globbing).
func (sh *shell) expand(w word) string {
	var sb strings.Builder
	for i, p := range w {
		switch p.kind {
		case partLit:
			sb.WriteString(p.text)
		case partSub:
			var out bytes.Buffer
			c := sh.child(cmdCtx{root: sh.root})
			c.run(p.text, stdio{in: strings.NewReader(""), out: &out, err: io.Discard})
			sb.WriteString(strings.TrimRight(out.String(), "\n"))
		case partExp:
			t := p.text
			if i == 0 && (t == "~" || strings.HasPrefix(t, "~/")) {
				t = sh.vars["HOME"] + t[1:]
			}
			sb.WriteString(sh.expandVars(t))
		}
	}
	return sb.String()
}

func (sh *shell) expandVars(t string) string {
	var sb strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] != '$' || i+1 == len(t) {
			sb.WriteByte(t[i])
			continue
		}
		name, n := varName(t[i+1:])
		if n == 0 {
			sb.WriteByte('$')
			continue
		}
		sb.WriteString(sh.lookupVar(name))
		i += n
	}
	return sb.String()
}

// varName reads the name after a '$' and how many bytes it used.
func varName(s string) (string, int) {
	if s[0] == '{' {
		if end := strings.IndexByte(s, '}'); end > 0 {
			return s[1:end], end + 1
		}
		return "", 0
	}
	if strings.IndexByte("?!$#0123456789", s[0]) >= 0 {
		return s[:1], 1
	}
	n := 0
	for n < len(s) && (s[n] == '_' || s[n] >= 'a' && s[n] <= 'z' || s[n] >= 'A' && s[n] <= 'Z' || n > 0 && s[n] >= '0' && s[n] <= '9') {
		n++
	}
	return s[:n], n
}

func (sh *shell) lookupVar(name string) string {
	switch name {
	case "?":
		return strconv.Itoa(sh.status)
	case "!":
		if sh.lastBg == 0 {
			return ""
		}
		return strconv.Itoa(sh.lastBg)
	case "$":
		return "4242"
	case "#":
		return "0"
	case "0":
		return "sh"
	}
	return sh.vars[name]
}
