package sim

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

type builtinFunc func(sh *shell, args []string, std stdio, cc cmdCtx) int

var builtins map[string]builtinFunc

func init() {
	builtins = map[string]builtinFunc{
		"true":  func(*shell, []string, stdio, cmdCtx) int { return 0 },
		":":     func(*shell, []string, stdio, cmdCtx) int { return 0 },
		"false": func(*shell, []string, stdio, cmdCtx) int { return 1 },
		"echo":  bEcho, "printf": bPrintf, "uname": bUname, "id": bID, "whoami": bWhoami,
		"hostname": bHostname, "test": bTest, "[": bTest, "mkdir": bMkdir, "chmod": bChmod,
		"chown": bChown, "chcon": bNoop, "mv": bMove, "cp": bMove, "rm": bRm, "touch": bTouch,
		"cat": bCat, "tee": bTee, "mktemp": bMktemp, "sleep": bSleep, "export": bExport,
		"set": bSet, "cd": bNoop, "umask": bNoop, "exit": bExit, "command": bCommandV,
		"which": bCommandV, "curl": bCurl, "wget": bWget, "systemctl": bSystemctl,
		"pkill": bPkill, "pgrep": bPgrep, "kill": bKill, "disown": bDisown,
	}
}

// builtin returns the builtin called name on h (systemctl only with systemd).
func builtin(h *Host, name string) builtinFunc {
	if name == "systemctl" {
		h.mu.Lock()
		on := h.systemd
		h.mu.Unlock()
		if !on {
			return nil
		}
	}
	return builtins[name]
}

func bNoop(*shell, []string, stdio, cmdCtx) int { return 0 }

func bEcho(_ *shell, args []string, std stdio, _ cmdCtx) int {
	args = args[1:]
	nl := true
	if len(args) > 0 && args[0] == "-n" {
		nl, args = false, args[1:]
	}
	io.WriteString(std.out, strings.Join(args, " "))
	if nl {
		io.WriteString(std.out, "\n")
	}
	return 0
}

// bPrintf understands %s, %d, %%, \n, \t and \\, reusing the format for
// extra arguments.
func bPrintf(_ *shell, args []string, std stdio, _ cmdCtx) int {
	if len(args) < 2 {
		fmt.Fprintln(std.err, "printf: usage: printf format [arguments]")
		return 2
	}
	format := strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(args[1])
	rest := args[2:]
	for {
		var sb strings.Builder
		for i := 0; i < len(format); i++ {
			if format[i] != '%' || i+1 == len(format) {
				sb.WriteByte(format[i])
				continue
			}
			i++
			switch format[i] {
			case 's', 'd':
				if len(rest) > 0 {
					sb.WriteString(rest[0])
					rest = rest[1:]
				}
			default:
				sb.WriteByte(format[i])
			}
		}
		io.WriteString(std.out, sb.String())
		if len(rest) == 0 || !strings.Contains(format, "%") {
			return 0
		}
	}
}

func bUname(_ *shell, args []string, std stdio, _ cmdCtx) int {
	out := "Linux"
	if len(args) > 1 {
		switch args[1] {
		case "-m", "-p", "-i":
			out = "x86_64"
		case "-r":
			out = "6.8.0-60-generic"
		case "-a":
			out = "Linux sim 6.8.0-60-generic #63-Ubuntu SMP x86_64 x86_64 x86_64 GNU/Linux"
		}
	}
	fmt.Fprintln(std.out, out)
	return 0
}

func (sh *shell) user(cc cmdCtx) (string, int) {
	if cc.root || sh.h.cfg.User == "root" {
		return "root", 0
	}
	return sh.h.cfg.User, 1000
}

func bID(sh *shell, args []string, std stdio, cc cmdCtx) int {
	name, uid := sh.user(cc)
	switch strings.Join(args[1:], " ") {
	case "-u":
		fmt.Fprintln(std.out, uid)
	case "-un", "-u -n", "-nu":
		fmt.Fprintln(std.out, name)
	default:
		fmt.Fprintf(std.out, "uid=%d(%s) gid=%d(%s) groups=%d(%s)\n", uid, name, uid, name, uid, name)
	}
	return 0
}

func bWhoami(sh *shell, _ []string, std stdio, cc cmdCtx) int {
	name, _ := sh.user(cc)
	fmt.Fprintln(std.out, name)
	return 0
}

func bHostname(sh *shell, _ []string, std stdio, _ cmdCtx) int {
	name := sh.h.cfg.InstanceID
	if name == "" {
		name = "sim"
	}
	fmt.Fprintln(std.out, name)
	return 0
}

// bTest understands -d -f -e -x -s -n -z, = and !=, and a leading !.
func bTest(sh *shell, args []string, std stdio, _ cmdCtx) int {
	a := args[1:]
	if args[0] == "[" {
		if len(a) == 0 || a[len(a)-1] != "]" {
			fmt.Fprintln(std.err, "sh: [: missing ]")
			return 2
		}
		a = a[:len(a)-1]
	}
	neg := len(a) > 0 && a[0] == "!"
	if neg {
		a = a[1:]
	}
	ok, bad := sh.evalTest(a)
	if bad {
		fmt.Fprintln(std.err, "sh: test: unsupported expression")
		return 2
	}
	if ok != neg {
		return 0
	}
	return 1
}

func (sh *shell) evalTest(a []string) (ok, bad bool) {
	switch len(a) {
	case 0:
		return false, false
	case 1:
		return a[0] != "", false
	case 2:
		isFile, isDir, exec := sh.h.stat(a[1])
		switch a[0] {
		case "-d":
			return isDir, false
		case "-f":
			return isFile, false
		case "-e":
			return isFile || isDir, false
		case "-x":
			return exec || isDir, false
		case "-s":
			data, err := sh.h.readFile(a[1])
			return err == nil && len(data) > 0, false
		case "-n":
			return a[1] != "", false
		case "-z":
			return a[1] == "", false
		}
	case 3:
		switch a[1] {
		case "=", "==":
			return a[0] == a[2], false
		case "!=":
			return a[0] != a[2], false
		}
	}
	return false, true
}

func bMktemp(sh *shell, args []string, std stdio, cc cmdCtx) int {
	p := fmt.Sprintf("/tmp/tmp.sim%06d", sh.h.newPID())
	var err error
	if len(args) > 1 && args[1] == "-d" {
		err = sh.h.mkdir(p, false, true)
	} else {
		err = sh.h.writeFile(p, nil, true, false)
	}
	if err != nil {
		fmt.Fprintf(std.err, "mktemp: %v\n", err)
		return 1
	}
	fmt.Fprintln(std.out, p)
	return 0
}

// bSleep waits on the network's clock (seconds, or with an s/m/h suffix);
// a background sleep returns at once.
func bSleep(sh *shell, args []string, std stdio, cc cmdCtx) int {
	if len(args) < 2 {
		fmt.Fprintln(std.err, "sleep: missing operand")
		return 1
	}
	d, err := time.ParseDuration(args[1])
	if err != nil {
		f, ferr := strconv.ParseFloat(args[1], 64)
		if ferr != nil {
			fmt.Fprintf(std.err, "sleep: invalid time interval '%s'\n", args[1])
			return 1
		}
		d = time.Duration(f * float64(time.Second))
	}
	if cc.bg {
		return 0
	}
	if sh.h.net.clock.Sleep(sh.ctx, d) != nil {
		return 130
	}
	return 0
}

func bExport(sh *shell, args []string, _ stdio, _ cmdCtx) int {
	for _, a := range args[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			sh.vars[k] = v
		}
	}
	return 0
}

// bSet understands -e / -o errexit and +e (and ignores other options).
func bSet(sh *shell, args []string, _ stdio, _ cmdCtx) int {
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-o" && i+1 < len(args):
			sh.errexit = sh.errexit || args[i+1] == "errexit"
			i++
		case strings.HasPrefix(a, "-") && strings.Contains(a, "e"):
			sh.errexit = true
		case strings.HasPrefix(a, "+") && strings.Contains(a, "e"):
			sh.errexit = false
		}
	}
	return 0
}

func bExit(sh *shell, args []string, _ stdio, _ cmdCtx) int {
	status := sh.status
	if len(args) > 1 {
		status, _ = strconv.Atoi(args[1])
	}
	sh.exited = true
	return status
}

// bCommandV is `command -v NAME` and `which NAME`: the path of a builtin
// (/usr/bin/NAME) or of a program on the host; exit 1 when absent.
func bCommandV(sh *shell, args []string, std stdio, _ cmdCtx) int {
	names := args[1:]
	if args[0] == "command" {
		if len(names) == 0 || names[0] != "-v" {
			fmt.Fprintln(std.err, "command: only -v is supported")
			return 2
		}
		names = names[1:]
	}
	status := 0
	for _, n := range names {
		if p, f := sh.h.lookPath(n); f != nil {
			fmt.Fprintln(std.out, p)
		} else if builtin(sh.h, n) != nil && n != "[" || n == "sh" || n == "bash" {
			fmt.Fprintln(std.out, "/usr/bin/"+n)
		} else {
			status = 1
		}
	}
	return status
}
