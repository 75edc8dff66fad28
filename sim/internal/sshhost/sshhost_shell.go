package sshhost

// The fake hosts' shell is mvdan.cc/sh/v3's interpreter: bash syntax (if,
// while, for, case, functions, here-documents, $(...), arithmetic, set -e,
// pipelines, && ||, background jobs) with every handler the interpreter
// offers pointing into the host's memory. Commands that are not shell
// builtins run as Go functions (sshhost_shell_exec.go lists them);
// redirections, tests and globs use the host's in-memory file system
// (sshhost_fs.go). Nothing reads or writes the process's own files, and no
// process starts. The shell's own builtins that would reach the process's
// operating system (test -r/-w/-x, cd, command -v, type, read -s, kill,
// umask, source, eval and trap strings) are routed to the host's versions
// or checked first (sshhost_shell_guard.go).
//
// A background job gets a pid from the host, so $! names the agent the job
// starts (a pid file written with `echo $!` holds the agent's pid). On a
// fake host a job never blocks (sleep returns at once, stdin is empty, an
// agent keeps running in the host, not in the job), so the job runs to its
// end before the shell goes on: the order is deterministic and no goroutine
// outlives a command.
//
// A pipeline runs its left side into an in-memory capture, then its right
// side from it (sshhost_shell_guard.go says why).
//
// Limitations: the working directory is the login user's home for the
// whole exec (cd elsewhere fails); process substitution and coproc are
// refused; at the top level the shell's own read and mapfile see no stdin
// (commands such as cat, tee and sh -s do); wait PID answers 0. Inside a
// testing/synctest bubble, a command that sleeps before reading more than
// 64 KiB of redirected input holds the bubble's clock (the interpreter
// hands stdin over as an operating-system pipe, whose writer then blocks).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Shell variables the rewritten scripts use (see sshhost_shell_guard.go).
const (
	varBgPID   = "__sim_bg"     // in a background job: the job's pid
	varLastBg  = "__sim_lastbg" // $!: the pid of the last background job
	varShellPD = "__sim_pid"    // $$: the shell's pid
)

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// execState is one exec request's state, shared by every shell it nests
// (sh -c, sudo sh -c) and every job they start.
type execState struct {
	h        *Host
	sess     *session
	stdin    *recStdin // the session's stdin
	detached atomic.Bool

	mu       sync.Mutex
	captures map[string]*syncBuffer // outputs of pipelines' left sides
}

// shellEnv is how one shell (and a command it runs) runs: as root or not.
type shellEnv struct {
	x    *execState
	root bool
}

// shellRun is what a shell runs and with what.
type shellRun struct {
	src    string
	name   string   // $0
	params []string // $1...
	flags  []string // set flags: -e, -u, -x, -o NAME
	env    []string // NAME=value
	dir    string
	stdin  *os.File // nil: the session's stdin (empty in a background job)
	stdout io.Writer
	stderr io.Writer
}

// runExec runs an exec request's command line as the login user's shell
// and returns its exit status and whether it started a detached agent.
func runExec(s *session, cmd string, in *recStdin, stdout, stderr io.Writer) (int, bool) {
	h := s.host
	x := &execState{h: h, sess: s, stdin: in, captures: map[string]*syncBuffer{}}
	sh := shellEnv{x: x, root: h.cfg.User == "root"}
	env := []string{"HOME=" + h.home(), "USER=" + h.cfg.User, "LOGNAME=" + h.cfg.User,
		"SHELL=/bin/bash", "PATH=" + defaultPath}
	for k, v := range s.env {
		env = append(env, k+"="+v)
	}
	status := sh.run(s.ctx, shellRun{src: cmd, name: "bash", env: env, dir: h.home(), stdout: stdout, stderr: stderr})
	return status, x.detached.Load()
}

// run parses and runs a script; a syntax error exits 2 and runs nothing.
// It returns the exit status (-1 when ctx ended the shell).
func (sh shellEnv) run(ctx context.Context, r shellRun) int {
	file, err := parseScript(r.src, r.name)
	if err != nil {
		var pe syntax.ParseError
		if errors.As(err, &pe) {
			err = fmt.Errorf("line %d: syntax error: %s", pe.Pos.Line(), pe.Text)
		}
		fmt.Fprintf(r.stderr, "%s: %v\n", r.name, err)
		return 2
	}
	uid := "1000"
	if sh.root {
		uid = "0"
	}
	env := slices.Concat(r.env, []string{varShellPD + "=" + strconv.Itoa(sh.x.h.newPID()),
		"UID=" + uid, "EUID=" + uid, "GID=" + uid})
	params := slices.Concat(r.flags, []string{"--"}, r.params)
	var stdin io.Reader
	if r.stdin != nil {
		stdin = r.stdin // an *os.File: the interpreter starts no copy
	}
	runner, err := interp.New(
		interp.Env(hostEnviron{Environ: expand.ListEnviron(env...), h: sh.x.h}),
		func(rn *interp.Runner) error { rn.Dir = r.dir; return nil }, // not interp.Dir: it stats the process's files
		interp.StdIO(stdin, r.stdout, r.stderr),
		interp.Params(params...),
		interp.CallHandler(sh.callHandler),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return sh.execHandler }),
		interp.OpenHandler(sh.open),
		interp.StatHandler(sh.stat),
		interp.ReadDirHandler2(sh.readDir),
	)
	if err != nil {
		fmt.Fprintf(r.stderr, "%s: %v\n", r.name, err)
		return 2
	}
	err = runner.Run(ctx, file)
	status := exitStatus(err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		status = -1
	} else if status == 2 && !isExit(err) {
		fmt.Fprintf(r.stderr, "%s: %v\n", r.name, err)
	}
	return status
}

func mustParse(src string) *syntax.File {
	f, err := syntax.NewParser().Parse(strings.NewReader(src), "")
	if err != nil {
		panic(err)
	}
	return f
}

func isExit(err error) bool {
	var es interp.ExitStatus
	return errors.As(err, &es)
}

// exitStatus maps Run's error to an exit status: nil is 0, an ExitStatus
// its value, anything else (a fatal error) 2.
func exitStatus(err error) int {
	var es interp.ExitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &es):
		return int(es)
	}
	return 2
}

// environ returns the exported variables of env as NAME=value for a new
// shell, with overrides and unsets (env, sudo) and the background marker.
func environ(env expand.Environ, overrides map[string]string, unset map[string]bool, clear bool, bgPID int) []string {
	vals := map[string]string{}
	if !clear {
		env.Each(func(name string, vr expand.Variable) bool {
			if vr.IsSet() && vr.Exported && vr.Kind == expand.String {
				vals[name] = vr.Str
			}
			return true
		})
	}
	for k := range unset {
		delete(vals, k)
	}
	for k, v := range overrides {
		vals[k] = v
	}
	for k := range vals {
		if strings.HasPrefix(k, internal) { // a new shell has its own
			delete(vals, k)
		}
	}
	if bgPID != 0 {
		vals[varBgPID] = strconv.Itoa(bgPID)
	}
	out := make([]string, 0, len(vals))
	for k, v := range vals {
		out = append(out, k+"="+v)
	}
	return out
}

// hostEnviron answers ~NAME from the host (the interpreter would read the
// process's user database): root's and the login user's homes; another
// name stays unexpanded.
type hostEnviron struct {
	expand.Environ
	h *Host
}

func (e hostEnviron) Get(name string) expand.Variable {
	user, ok := strings.CutPrefix(name, "HOME ")
	if !ok {
		return e.Environ.Get(name)
	}
	home := "~" + user
	switch user {
	case "root":
		home = "/root"
	case e.h.cfg.User:
		home = e.h.home()
	}
	return expand.Variable{Set: true, Kind: expand.String, Str: home}
}

// sessionOutput is the session's stdout or stderr. A background job whose
// stdout or stderr is still one holds the session open, as a child holding
// the session's pipe does for sshd (see call.agent).
type sessionOutput struct{ io.Writer }

// holdsSession reports whether w writes to the session's output (directly
// or through /dev/stdout, /dev/stderr).
func holdsSession(w io.Writer) bool {
	for {
		switch v := w.(type) {
		case *sessionOutput:
			return true
		case writeOnly:
			w = v.Writer
		default:
			return false
		}
	}
}

// recStdin is the session's stdin; it records what commands consume.
type recStdin struct {
	r   io.Reader
	mu  sync.Mutex
	got []byte
}

func (r *recStdin) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.mu.Lock()
	r.got = append(r.got, p[:n]...)
	r.mu.Unlock()
	return n, err
}

func (r *recStdin) consumed() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.got...)
}

// syncBuffer is a bytes buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf = append(b.buf, p...)
	b.mu.Unlock()
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// hasRule reports whether a scripted outcome matches cmd, without using
// it up.
func (h *Host) hasRule(cmd string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.rules {
		if r.match(cmd) {
			return true
		}
	}
	return false
}
