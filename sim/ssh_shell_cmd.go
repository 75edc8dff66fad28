package sim

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// command strips wrappers (sudo, env, nohup, setsid, exec, timeout,
// command) and runs a nested shell, a scripted outcome, the agent, or a
// builtin, in that order.
func (sh *shell) command(args []string, std stdio, cc cmdCtx) int {
	args, cc, err := unwrap(args, cc)
	if err != "" {
		fmt.Fprintln(std.err, err)
		return 1
	}
	if len(args) == 0 {
		return 0
	}
	name := path.Base(args[0])
	switch name {
	case "sh", "bash", "dash":
		return sh.nested(args[1:], std, cc)
	}
	if handler := sh.h.rule(strings.Join(args, " ")); handler != nil {
		var stdin []byte
		if !cc.bg {
			stdin, _ = io.ReadAll(std.in)
		}
		out, errOut, status := handler(strings.Join(args, " "), stdin)
		io.WriteString(std.out, out)
		io.WriteString(std.err, errOut)
		return status
	}
	if name == sh.h.agentSpec().Binary {
		return sh.startAgent(args, std, cc)
	}
	if b := builtin(sh.h, name); b != nil {
		return b(sh, args, std, cc)
	}
	return sh.external(args, std)
}

// unwrap strips leading wrapper commands and NAME=value words, adjusting
// cc. The environment is not passed on (no command reads it).
func unwrap(args []string, cc cmdCtx) ([]string, cmdCtx, string) {
	for len(args) > 0 {
		switch path.Base(args[0]) {
		case "sudo":
			cc.root = true
			args = skipFlags(args[1:], "-u", "-g", "-C", "-D", "-p")
			if len(args) == 0 {
				return nil, cc, "usage: sudo [-u user] command"
			}
		case "env":
			args = skipFlags(args[1:], "-u", "-C")
			for len(args) > 0 && isAssignment(args[0]) {
				args = args[1:]
			}
		case "nohup":
			cc.detach, args = true, args[1:]
		case "setsid":
			cc.detach, args = true, args[1:]
			for len(args) > 0 && strings.HasPrefix(args[0], "-") {
				if args[0] == "-f" || args[0] == "--fork" {
					cc.bg = true
				}
				args = args[1:]
			}
		case "exec":
			args = args[1:]
		case "timeout":
			args = skipFlags(args[1:], "-s", "-k", "--signal", "--kill-after")
			if len(args) > 0 {
				args = args[1:] // the duration
			}
		case "command":
			if len(args) > 1 && strings.HasPrefix(args[1], "-") {
				return args, cc, ""
			}
			args = args[1:]
		default:
			if !isAssignment(args[0]) { // sudo NAME=value cmd
				return args, cc, ""
			}
			args = args[1:]
		}
	}
	return args, cc, ""
}

// skipFlags drops leading flags; those in withArg take the next word.
func skipFlags(args []string, withArg ...string) []string {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
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

// nested runs sh/bash with -c SCRIPT, a script file, or the script on
// stdin (no arguments, or -s). Flags -e, -x, -u, -l are understood.
func (sh *shell) nested(args []string, std stdio, cc cmdCtx) int {
	c := sh.child(cc)
	hasC := false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		f := args[0]
		args = args[1:]
		if f == "-o" && len(args) > 0 {
			c.errexit = c.errexit || args[0] == "errexit"
			args = args[1:]
			continue
		}
		hasC = hasC || strings.Contains(f, "c")
		c.errexit = c.errexit || strings.Contains(f, "e")
	}
	switch {
	case hasC && len(args) == 0:
		fmt.Fprintln(std.err, "sh: 0: -c requires an argument")
		return 2
	case hasC:
		return c.run(args[0], std)
	case len(args) > 0:
		data, err := sh.h.readFile(args[0])
		if err != nil {
			fmt.Fprintf(std.err, "sh: 0: cannot open %s: %v\n", args[0], err)
			return 2
		}
		return c.run(string(data), std)
	}
	if cc.bg {
		return 0
	}
	data, _ := io.ReadAll(std.in)
	return c.run(string(data), stdio{in: strings.NewReader(""), out: std.out, err: std.err})
}

// external runs a program that is not a builtin: a file on the host runs
// and does nothing; otherwise "command not found" (127).
func (sh *shell) external(args []string, std stdio) int {
	p, f := sh.h.lookPath(args[0])
	switch {
	case f == nil:
		fmt.Fprintf(std.err, "sh: %s: command not found\n", args[0])
		return 127
	case !f.exec:
		fmt.Fprintf(std.err, "sh: %s: Permission denied\n", p)
		return 126
	}
	return 0
}
