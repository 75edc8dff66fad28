package sshhost

// What keeps the interpreter inside the host's memory. Scripts are parsed
// and rewritten before they run (parseScript), and every simple command
// passes the call handler (callHandler) before the interpreter runs it:
//
//   - process substitution (it makes a FIFO among the process's files) and
//     coproc are refused;
//   - `cmd &` asks the host for a pid and runs cmd to its end in a subshell
//     with the background's rules (see rewriteJob); $! (rewritten to
//     $__sim_lastbg) is that pid, and $$ the shell's pid from the host;
//   - [[ -r/-w/-x/-O/-G F ]] (the process's access(2) and user) become
//     [[ -n "$(__sim_testp -x F)" ]], the host's test printing "y" when true;
//   - the builtins test, [, cd, pushd, popd, type, command -v, kill,
//     disown, umask and ulimit run the host's versions; read -s is refused
//     (it reads the process's terminal); pwd -P is pwd; wait PID is wait
//     (jobs have ended already); eval, source and trap strings are rewritten
//     like scripts;
//   - `x | y` runs x into an in-memory capture, then y from it (see
//     rewritePipe);
//   - a builtin that a scripted outcome (Host.OnCommand) matches runs it.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// internal prefixes the names of the host's own versions of builtins.
const internal = "__sim_"

// parseScript parses src (bash syntax) and rewrites it (see above).
func parseScript(src, name string) (*syntax.File, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(src), name)
	if err != nil {
		return nil, err
	}
	if err := rewrite(f); err != nil {
		return nil, err
	}
	return f, nil
}

// rewriteSource parses, rewrites and prints src back (for eval, source
// and trap).
func rewriteSource(src string) (string, error) {
	f, err := parseScript(src, "")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, f); err != nil {
		return "", err
	}
	return b.String(), nil
}

func rewrite(f *syntax.File) error {
	var bad error
	var jobs, pipes []*syntax.Stmt
	var tests []*syntax.UnaryTest
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ProcSubst:
			bad = errors.New("process substitution is not supported on this host")
		case *syntax.CoprocClause:
			bad = errors.New("coproc is not supported on this host")
		case *syntax.Stmt:
			if n.Coprocess {
				bad = errors.New("coproc is not supported on this host")
			}
			if n.Background || n.Disown {
				jobs = append(jobs, n)
			}
			if b, ok := n.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
				pipes = append(pipes, n)
			}
		case *syntax.ParamExp:
			if n.Param != nil && !n.Excl && !n.Length && n.Index == nil {
				switch n.Param.Value {
				case "!":
					n.Param = lit(varLastBg)
				case "$":
					n.Param = lit(varShellPD)
				}
			}
		case *syntax.UnaryTest:
			switch n.Op {
			case syntax.TsRead, syntax.TsWrite, syntax.TsExec, syntax.TsUsrOwn, syntax.TsGrpOwn:
				tests = append(tests, n)
			}
		}
		return bad == nil
	})
	if bad != nil {
		return bad
	}
	for _, st := range pipes {
		rewritePipe(st)
	}
	for _, st := range jobs {
		rewriteJob(st)
	}
	for _, t := range tests {
		x, ok := t.X.(*syntax.Word)
		if !ok {
			continue
		}
		sub := &syntax.CmdSubst{Stmts: []*syntax.Stmt{{Cmd: &syntax.CallExpr{
			Args: []*syntax.Word{word(lit(internal + "testp")), word(lit(t.Op.String())), x}}}}}
		t.Op, t.X = syntax.TsNempStr, word(&syntax.DblQuoted{Parts: []syntax.WordPart{sub}})
	}
	return nil
}

// jobTemplate is what `J &` becomes: the job gets a pid from the host,
// then runs to its end in a subshell that knows it is in the background
// (see rewriteJob).
const jobTemplate = `{ ` + varLastBg + `=$(` + internal + `fork); ( ` + varBgPID + `=$` + varLastBg + `; __sim_J ) || :; }`

// rewriteJob runs the background job st in the foreground, in a subshell
// with the background's rules (no stdin, sleep returns at once, an agent
// keeps running in the host): on a fake host a job never blocks, so it
// ends before the shell goes on, deterministically (kill -0 $! right after
// `agent &` finds the agent), and the interpreter starts no goroutine.
func rewriteJob(st *syntax.Stmt) {
	f := mustParse(jobTemplate)
	job := &syntax.Stmt{Cmd: st.Cmd, Negated: st.Negated}
	syntax.Walk(f, func(node syntax.Node) bool {
		if b, ok := node.(*syntax.BinaryCmd); ok && b.Op == syntax.OrStmt {
			b.X.Redirs = st.Redirs
			sub := b.X.Cmd.(*syntax.Subshell)
			sub.Stmts[len(sub.Stmts)-1] = job
			return false
		}
		return true
	})
	st.Cmd = f.Stmts[0].Cmd
	st.Negated, st.Background, st.Disown, st.Redirs = false, false, false, nil
}

// pipeSeq numbers the rewritten pipelines (their variables and captures).
var pipeSeq atomic.Int64

// pipeTemplate is what `X | Y` becomes (@N numbers it; X and Y are
// placeholders): X runs in a subshell into an in-memory capture, then Y
// reads it. The status is Y's, or with pipefail X's when Y succeeded; set -e
// acts on that status only, as for a pipeline.
const pipeTemplate = `{ __sim_ps@N=0; __sim_py@N=0; __sim_pf@N=0; [[ -o pipefail ]] && __sim_pf@N=1
( __sim_X ) >"@CAPTURE" @ALL|| __sim_ps@N=$?
{ __sim_Y; } <"@CAPTURE" || __sim_py@N=$?
(exit $(( __sim_py@N + (__sim_py@N == 0) * __sim_pf@N * __sim_ps@N ))); }` // no ?: (the interpreter reads 127 ? a : b as false)

// rewritePipe runs the pipeline st one side after the other through an
// in-memory capture (see pipeTemplate): the interpreter's pipelines use
// operating-system pipes, and a reader blocked on one is not durably
// blocked for testing/synctest, so a pipeline whose writer waits on the
// clock would stop time. The capture's name is unique per pipeline, shell
// and background job.
func rewritePipe(st *syntax.Stmt) {
	b := st.Cmd.(*syntax.BinaryCmd)
	n := strconv.FormatInt(pipeSeq.Add(1), 10)
	all := ""
	if b.Op == syntax.PipeAll {
		all = "2>&1 "
	}
	capture := pipeDir + n + ".${" + varBgPID + "}.${" + varShellPD + "}"
	src := strings.NewReplacer("@N", n, "@CAPTURE", capture, "@ALL", all).Replace(pipeTemplate)
	f := mustParse(src)
	syntax.Walk(f, func(node syntax.Node) bool {
		var stmts []*syntax.Stmt
		switch node := node.(type) {
		case *syntax.Subshell:
			stmts = node.Stmts
		case *syntax.Block:
			stmts = node.Stmts
		}
		for i, s := range stmts {
			if c, ok := s.Cmd.(*syntax.CallExpr); ok && len(c.Args) == 1 {
				switch c.Args[0].Lit() {
				case "__sim_X":
					stmts[i] = b.X
				case "__sim_Y":
					stmts[i] = b.Y
				}
			}
		}
		return true
	})
	st.Cmd = f.Stmts[0].Cmd
}

func lit(s string) *syntax.Lit { return &syntax.Lit{Value: s} }

func word(p syntax.WordPart) *syntax.Word { return &syntax.Word{Parts: []syntax.WordPart{p}} }

// routed are the builtins the host runs itself.
var routed = map[string]bool{"test": true, "[": true, "cd": true, "pushd": true, "popd": true,
	"type": true, "kill": true, "disown": true, "umask": true, "ulimit": true}

// callHandler is the interpreter's CallHandler (see above).
func (sh shellEnv) callHandler(ctx context.Context, args []string) ([]string, error) {
	i := 0
	for i < len(args)-1 && (args[i] == "builtin" || args[i] == "command" && !strings.HasPrefix(args[i+1], "-")) {
		i++
	}
	name, rest := args[i], args[i+1:]
	if !interp.IsBuiltin(name) {
		return args, nil
	}
	to := func(n string, a ...string) []string { return append([]string{n}, a...) }
	if sh.x.h.hasRule(strings.Join(args[i:], " ")) {
		return to(internal+"rule", args[i:]...), nil
	}
	switch {
	case routed[name], name == "command" && len(rest) > 0:
		return to(internal+name, rest...), nil
	case name == "pwd":
		return to("pwd"), nil
	case name == "wait" && len(rest) > 0:
		return to("wait"), nil
	case name == "read" && readsTerminal(rest):
		return to(internal+"refuse", "read: -s reads a terminal, which this host has not"), nil
	case name == "eval":
		return rewritten(strings.Join(rest, " "), "eval"), nil
	case name == "source" || name == ".":
		return sh.source(ctx, rest)
	case name == "trap":
		if len(rest) > 0 && rest[0] == "--" {
			rest = rest[1:]
		}
		if len(rest) < 2 || strings.HasPrefix(rest[0], "-") {
			return args, nil // trap -p, trap -l, trap - SIG, trap SIG
		}
		src, err := rewriteSource(rest[0])
		if err != nil {
			return to(internal+"refuse", "trap: "+err.Error()), nil
		}
		return to("trap", append([]string{src}, rest[1:]...)...), nil
	}
	return args, nil
}

// readsTerminal reports whether read's options include -s.
func readsTerminal(args []string) bool {
	for i := 0; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		if strings.ContainsRune(args[i][1:], 's') {
			return true
		}
		if strings.ContainsAny(args[i], "pdtnNu") { // an option with a value
			i++
		}
	}
	return false
}

// rewritten runs src with eval once rewritten, or refuses it.
func rewritten(src, what string) []string {
	out, err := rewriteSource(src)
	if err != nil {
		return []string{internal + "refuse", what + ": " + err.Error()}
	}
	return []string{"eval", out}
}

// source reads a script from the host (a name without '/' is looked up in
// PATH, then in the current directory) and evals it rewritten.
func (sh shellEnv) source(ctx context.Context, args []string) ([]string, error) {
	if len(args) == 0 {
		return []string{internal + "refuse", "source: filename argument required"}, nil
	}
	h := sh.x.h
	p := args[0]
	if !strings.Contains(p, "/") {
		if lp, f := h.lookPath(p); f != nil {
			p = lp
		}
	}
	data, err := h.readFile(sh.absIn(interp.HandlerCtx(ctx).Dir, p))
	if err != nil {
		return []string{internal + "refuse", "source: " + args[0] + ": " + err.Error()}, nil
	}
	return rewritten(string(data), "source"), nil
}
