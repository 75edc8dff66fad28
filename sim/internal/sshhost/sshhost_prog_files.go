package sshhost

// File commands of the fake hosts: mkdir, chmod, chown, chgrp, mv, cp, ln,
// install, rm, touch, cat, tee.

import (
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

func progNoop(*call) int { return 0 }

func progMkdir(c *call) int {
	parents := false
	status := 0
	for i := 1; i < len(c.args); i++ {
		switch a := c.args[i]; {
		case a == "-p" || a == "--parents":
			parents = true
		case a == "-m":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			if err := c.sh.x.h.mkdir(c.file(a), parents, c.sh.root); err != nil {
				c.errf("mkdir: cannot create directory '%s': %v\n", a, err)
				status = 1
			}
		}
	}
	return status
}

// modeExec reads a chmod or install mode (octal, or symbolic: +x, u+x,
// a=rx, -x) and reports whether it sets (or, for -x, clears) the executable
// bit; ok is false for an unreadable mode.
func modeExec(mode string) (exec, ok bool) {
	if n, err := strconv.ParseUint(mode, 8, 32); err == nil {
		return n&0o111 != 0, true
	}
	for _, clause := range strings.Split(mode, ",") {
		i := strings.IndexAny(clause, "+-=")
		if i < 0 || strings.Trim(clause[:i], "ugoa") != "" {
			return false, false
		}
		if strings.Contains(clause[i:], "x") {
			exec = clause[i] != '-'
		}
	}
	return exec, true
}

// progChmod sets or clears the executable bit.
func progChmod(c *call) int {
	a := c.args[1:]
	for len(a) > 0 && strings.HasPrefix(a[0], "-") && !strings.ContainsAny(a[0], "rwxX") {
		a = a[1:]
	}
	if len(a) < 2 {
		c.errf("chmod: missing operand\n")
		return 1
	}
	exec, ok := modeExec(a[0])
	if !ok {
		c.errf("chmod: invalid mode: '%s'\n", a[0])
		return 1
	}
	status := 0
	for _, p := range a[1:] {
		if err := c.sh.x.h.chmod(c.file(p), exec, c.sh.root); err != nil {
			c.errf("chmod: cannot access '%s': %v\n", p, err)
			status = 1
		}
	}
	return status
}

func progChown(c *call) int {
	if !c.sh.root {
		c.errf("%s: changing ownership: Operation not permitted\n", c.args[0])
		return 1
	}
	return 0
}

// progMove is mv, cp and ln (which copies) of files: CMD [-f] SRC... DST.
func progMove(c *call) int {
	a := skipFlags(c.args[1:], "-t", "-S")
	if len(a) < 2 {
		c.errf("%s: missing destination file operand\n", c.args[0])
		return 1
	}
	move := path.Base(c.args[0]) == "mv"
	dst := a[len(a)-1]
	status := 0
	for _, src := range a[:len(a)-1] {
		if err := c.sh.x.h.copyFile(c.file(src), c.file(dst), move, c.sh.root, 0); err != nil {
			c.errf("%s: cannot %s '%s' to '%s': %v\n", c.args[0], map[bool]string{true: "move", false: "copy"}[move], src, dst, err)
			status = 1
		}
	}
	return status
}

// progInstall is install [-m MODE] [-D] SRC... DST and install -d DIR...:
// the copies are executable unless MODE says otherwise.
func progInstall(c *call) int {
	var ops []string
	mode, dirs, parents := fs.FileMode(0o755), false, false
	for i := 1; i < len(c.args); i++ {
		switch a := c.args[i]; {
		case a == "-m" || a == "--mode":
			i++
			exec, ok := modeExec(argAt(c.args, i))
			if !ok {
				c.errf("install: invalid mode '%s'\n", argAt(c.args, i))
				return 1
			}
			mode = map[bool]fs.FileMode{true: 0o755, false: 0o644}[exec]
		case a == "-o" || a == "-g" || a == "--owner" || a == "--group" || a == "-t" || a == "-S":
			i++
		case a == "-d" || a == "--directory":
			dirs = true
		case a == "-D":
			parents = true
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			ops = append(ops, a)
		}
	}
	h := c.sh.x.h
	if dirs {
		for _, d := range ops {
			if err := h.mkdir(c.file(d), true, c.sh.root); err != nil {
				c.errf("install: cannot create directory '%s': %v\n", d, err)
				return 1
			}
		}
		return 0
	}
	if len(ops) < 2 {
		c.errf("install: missing destination file operand\n")
		return 1
	}
	dst := c.file(ops[len(ops)-1])
	if parents {
		if err := h.mkdir(parentDir(dst), true, c.sh.root); err != nil {
			c.errf("install: cannot create directory '%s': %v\n", parentDir(dst), err)
			return 1
		}
	}
	for _, src := range ops[:len(ops)-1] {
		if err := h.copyFile(c.file(src), dst, false, c.sh.root, mode); err != nil {
			c.errf("install: cannot install '%s' to '%s': %v\n", src, ops[len(ops)-1], err)
			return 1
		}
	}
	return 0
}

func progRm(c *call) int {
	rec, force := false, false
	status := 0
	for _, a := range c.args[1:] {
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			rec = rec || strings.ContainsAny(a, "rR") || a == "--recursive"
			force = force || strings.Contains(a, "f")
			continue
		}
		if err := c.sh.x.h.remove(c.file(a), rec, c.sh.root); err != nil && !(force && err == errNoEnt) {
			c.errf("rm: cannot remove '%s': %v\n", a, err)
			status = 1
		}
	}
	return status
}

func progTouch(c *call) int {
	status := 0
	for _, p := range skipFlags(c.args[1:], "-d", "-t", "-r") {
		if err := c.sh.x.h.writeFile(c.file(p), nil, c.sh.root, true); err != nil {
			c.errf("touch: cannot touch '%s': %v\n", p, err)
			status = 1
		}
	}
	return status
}

// progCat copies stdin (no arguments, or -) or the files to stdout.
func progCat(c *call) int {
	files := skipFlags(c.args[1:])
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, p := range files {
		if p == "-" {
			_, _ = io.Copy(c.stdout, c.input())
			continue
		}
		data, err := c.sh.x.h.readFile(c.file(p))
		if err != nil {
			c.errf("cat: %s: %v\n", p, err)
			status = 1
			continue
		}
		_, _ = c.stdout.Write(data)
	}
	return status
}

// progTee copies stdin to stdout and to each file ([-a] to append).
func progTee(c *call) int {
	data, _ := io.ReadAll(c.input())
	_, _ = c.stdout.Write(data)
	appendMode := false
	status := 0
	for _, a := range c.args[1:] {
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			appendMode = appendMode || a == "-a" || a == "--append"
			continue
		}
		if err := c.sh.x.h.writeFile(c.file(a), data, c.sh.root, appendMode); err != nil {
			c.errf("tee: %s: %v\n", a, err)
			status = 1
		}
	}
	return status
}

func argAt(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}
