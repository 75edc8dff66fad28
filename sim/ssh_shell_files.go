package sim

// File commands of the fake hosts' shell: mkdir, chmod, chown, mv, cp, rm,
// touch, cat, tee, test.

import (
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
)

func fsErr(std stdio, cmd, p string, err error) int {
	fmt.Fprintf(std.err, "%s: cannot access '%s': %v\n", cmd, p, err)
	return 1
}

func bMkdir(sh *shell, args []string, std stdio, cc cmdCtx) int {
	parents := false
	status := 0
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-p" || a == "--parents":
			parents = true
		case a == "-m":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			if err := sh.h.mkdir(a, parents, cc.root); err != nil {
				fmt.Fprintf(std.err, "mkdir: cannot create directory '%s': %v\n", a, err)
				status = 1
			}
		}
	}
	return status
}

// bChmod sets the executable bit from a numeric mode (any x bit) or a
// symbolic one (+x, u+x, a+x, 755…; -x clears it).
func bChmod(sh *shell, args []string, std stdio, cc cmdCtx) int {
	a := skipFlags(args[1:])
	if len(a) < 2 {
		fmt.Fprintln(std.err, "chmod: missing operand")
		return 1
	}
	mode := a[0]
	exec := strings.Contains(mode, "+x") || strings.Contains(mode, "=") && strings.Contains(mode, "x")
	if n, err := strconv.ParseUint(mode, 8, 32); err == nil {
		exec = n&0o111 != 0
	}
	status := 0
	for _, p := range a[1:] {
		if err := sh.h.chmod(p, exec, cc.root); err != nil {
			status = fsErr(std, "chmod", p, err)
		}
	}
	return status
}

func bChown(sh *shell, args []string, std stdio, cc cmdCtx) int {
	if !cc.root {
		fmt.Fprintln(std.err, "chown: changing ownership: Operation not permitted")
		return 1
	}
	return 0
}

// bMove is mv and cp of single files: mv|cp [-f] SRC DST.
func bMove(sh *shell, args []string, std stdio, cc cmdCtx) int {
	a := skipFlags(args[1:])
	if len(a) != 2 {
		fmt.Fprintf(std.err, "%s: expected SRC DST\n", args[0])
		return 1
	}
	if err := sh.h.copyFile(a[0], a[1], path.Base(args[0]) == "mv", cc.root); err != nil {
		fmt.Fprintf(std.err, "%s: cannot move '%s' to '%s': %v\n", args[0], a[0], a[1], err)
		return 1
	}
	return 0
}

func bRm(sh *shell, args []string, std stdio, cc cmdCtx) int {
	rec, force := false, false
	status := 0
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			rec = rec || strings.ContainsAny(a, "rR")
			force = force || strings.Contains(a, "f")
			continue
		}
		if err := sh.h.remove(a, rec, cc.root); err != nil && !(force && err == errNoEnt) {
			fmt.Fprintf(std.err, "rm: cannot remove '%s': %v\n", a, err)
			status = 1
		}
	}
	return status
}

func bTouch(sh *shell, args []string, std stdio, cc cmdCtx) int {
	status := 0
	for _, p := range skipFlags(args[1:]) {
		if err := sh.h.writeFile(p, nil, cc.root, true); err != nil {
			fmt.Fprintf(std.err, "touch: cannot touch '%s': %v\n", p, err)
			status = 1
		}
	}
	return status
}

// bCat copies stdin (no arguments, or -) or the files to stdout.
func bCat(sh *shell, args []string, std stdio, _ cmdCtx) int {
	files := skipFlags(args[1:])
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, p := range files {
		if p == "-" {
			_, _ = io.Copy(std.out, std.in)
			continue
		}
		data, err := sh.h.readFile(p)
		if err != nil {
			fmt.Fprintf(std.err, "cat: %s: %v\n", p, err)
			status = 1
			continue
		}
		_, _ = std.out.Write(data)
	}
	return status
}

// bTee copies stdin to stdout and to each file ([-a] to append).
func bTee(sh *shell, args []string, std stdio, cc cmdCtx) int {
	data, _ := io.ReadAll(std.in)
	_, _ = std.out.Write(data)
	appendMode := false
	status := 0
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			appendMode = appendMode || a == "-a" || a == "--append"
			continue
		}
		if err := sh.h.writeFile(a, data, cc.root, appendMode); err != nil {
			fmt.Fprintf(std.err, "tee: %s: %v\n", a, err)
			status = 1
		}
	}
	return status
}
