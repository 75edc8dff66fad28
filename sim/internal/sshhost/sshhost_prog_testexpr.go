package sshhost

// test and [ on the fake hosts: POSIX test over the host's file system
// (the shell's own builtin would ask the process's access(2)). File tests:
// -e -a -f -d -s -x -r -w -O -G -c (and -b -p -S -h -L -k -u -g -t -N,
// always false here); strings: -n -z = == != < >; integers: -eq -ne -lt
// -le -gt -ge; files: -ef (-nt, -ot: false, files have no times); -v NAME;
// ! ( ) -a -o.

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
)

func progTest(c *call) int {
	a := c.args[1:]
	if path.Base(c.args[0]) == "[" {
		if len(a) == 0 || a[len(a)-1] != "]" {
			c.errf("sh: [: missing ]\n")
			return 2
		}
		a = a[:len(a)-1]
	}
	t := &testEval{c: c, args: a}
	ok, err := t.top()
	if err != nil {
		c.errf("sh: %s: %v\n", path.Base(c.args[0]), err)
		return 2
	}
	if ok {
		return 0
	}
	return 1
}

// progTestPrint is test that prints "y" when true (for [[ ]]'s file tests).
func progTestPrint(c *call) int {
	c.args[0] = "test"
	if progTest(c) == 0 {
		c.outf("y")
	}
	return 0
}

type testEval struct {
	c    *call
	args []string
	i    int
}

var testBinary = map[string]bool{"=": true, "==": true, "!=": true, "<": true, ">": true, "-eq": true,
	"-ne": true, "-lt": true, "-le": true, "-gt": true, "-ge": true, "-nt": true, "-ot": true, "-ef": true}

var testUnary = map[string]bool{"-e": true, "-a": true, "-f": true, "-d": true, "-s": true, "-x": true,
	"-r": true, "-w": true, "-O": true, "-G": true, "-c": true, "-b": true, "-p": true, "-S": true, "-h": true,
	"-L": true, "-k": true, "-u": true, "-g": true, "-t": true, "-N": true, "-n": true, "-z": true, "-v": true}

// top follows POSIX for up to four arguments, then precedence parsing.
func (t *testEval) top() (bool, error) {
	a := t.args
	switch {
	case len(a) == 0:
		return false, nil
	case len(a) == 1:
		return a[0] != "", nil
	case len(a) == 2 && a[0] == "!":
		return a[1] == "", nil
	case len(a) == 3 && testBinary[a[1]] || len(a) == 3 && (a[1] == "-a" || a[1] == "-o"):
		return t.binary(a[0], a[1], a[2])
	case len(a) <= 4 && a[0] == "!":
		sub := &testEval{c: t.c, args: a[1:]}
		ok, err := sub.top()
		return !ok, err
	case len(a) == 3 && a[0] == "(" && a[2] == ")":
		return a[1] != "", nil
	}
	ok, err := t.or()
	if err == nil && t.i < len(t.args) {
		err = fmt.Errorf("%s: unexpected operator", t.args[t.i])
	}
	return ok, err
}

func (t *testEval) next() (string, bool) {
	if t.i >= len(t.args) {
		return "", false
	}
	t.i++
	return t.args[t.i-1], true
}

func (t *testEval) peek(k int) (string, bool) {
	if t.i+k >= len(t.args) {
		return "", false
	}
	return t.args[t.i+k], true
}

func (t *testEval) or() (bool, error) {
	ok, err := t.and()
	for err == nil {
		if op, _ := t.peek(0); op != "-o" {
			break
		}
		t.i++
		var r bool
		r, err = t.and()
		ok = ok || r
	}
	return ok, err
}

func (t *testEval) and() (bool, error) {
	ok, err := t.not()
	for err == nil {
		if op, _ := t.peek(0); op != "-a" {
			break
		}
		t.i++
		var r bool
		r, err = t.not()
		ok = ok && r
	}
	return ok, err
}

func (t *testEval) not() (bool, error) {
	if op, _ := t.peek(0); op == "!" {
		t.i++
		ok, err := t.not()
		return !ok, err
	}
	return t.primary()
}

func (t *testEval) primary() (bool, error) {
	tok, ok := t.next()
	if !ok {
		return false, errors.New("argument expected")
	}
	if tok == "(" {
		r, err := t.or()
		if err != nil {
			return false, err
		}
		if cl, _ := t.next(); cl != ")" {
			return false, errors.New("')' expected")
		}
		return r, nil
	}
	if op, ok := t.peek(0); ok && testBinary[op] {
		if rhs, ok := t.peek(1); ok {
			t.i += 2
			return t.binary(tok, op, rhs)
		}
	}
	if testUnary[tok] {
		if arg, ok := t.next(); ok {
			return t.unary(tok, arg), nil
		}
	}
	return tok != "", nil
}

func (t *testEval) binary(x, op, y string) (bool, error) {
	switch op {
	case "=", "==":
		return x == y, nil
	case "!=":
		return x != y, nil
	case "<":
		return x < y, nil
	case ">":
		return x > y, nil
	case "-a":
		return x != "" && y != "", nil
	case "-o":
		return x != "" || y != "", nil
	case "-nt", "-ot":
		return false, nil
	case "-ef":
		p, q := t.c.file(x), t.c.file(y)
		_, ok := t.c.sh.x.h.stat(p)
		return ok && p == q, nil
	}
	a, err1 := strconv.ParseInt(x, 10, 64)
	b, err2 := strconv.ParseInt(y, 10, 64)
	if err1 != nil || err2 != nil {
		bad := x
		if err1 == nil {
			bad = y
		}
		return false, fmt.Errorf("%s: integer expression expected", bad)
	}
	return map[string]bool{"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b}[op], nil
}

func (t *testEval) unary(op, x string) bool {
	switch op {
	case "-n":
		return x != ""
	case "-z":
		return x == ""
	case "-v":
		return t.c.hc.Env.Get(x).IsSet()
	}
	h, p := t.c.sh.x.h, t.c.file(x)
	info, ok := h.stat(p)
	if !ok {
		return false
	}
	switch op {
	case "-e", "-a", "-r":
		return true
	case "-f":
		return info.Mode().IsRegular()
	case "-d":
		return info.IsDir()
	case "-s":
		return info.Size() > 0
	case "-x":
		return info.Mode()&0o111 != 0
	case "-c":
		return info.Mode()&fs.ModeCharDevice != 0
	case "-w", "-O", "-G":
		return t.c.sh.root || h.userWritable(p)
	}
	return false
}
