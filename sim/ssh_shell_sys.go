package sim

import (
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// startAgent runs the agent binary: in the foreground it blocks until the
// session ends (tied); with "&" it is tied to the session unless nohup or
// setsid wrapped it (or disown follows). A launch while the agent runs is
// counted and exits at once ("address already in use").
func (sh *shell) startAgent(args []string, std stdio, cc cmdCtx) int {
	p, f := sh.h.lookPath(args[0])
	if st := checkExec(std, args[0], p, f); st != 0 {
		return st
	}
	spec := sh.h.agentSpec()
	detached := cc.bg && cc.detach
	proc, started := sh.h.launchAgent(detached, "", cc.root, strings.Join(append([]string{p}, args[1:]...), " "))
	if !started {
		fmt.Fprintf(std.err, "listen tcp 127.0.0.1:%d: bind: address already in use\n", spec.Port)
		if cc.bg {
			sh.lastBg, sh.lastBgProc = sh.h.newPID(), nil
			return 0
		}
		return 1
	}
	if detached {
		*sh.detached = true
	} else {
		sh.sess.tie(proc)
	}
	if cc.bg {
		sh.lastBg, sh.lastBgProc = proc.pid, proc
		return 0
	}
	select {
	case <-sh.ctx.Done():
		return -1
	case <-proc.dead:
		return 143 // SIGTERM
	}
}

// checkExec reports a missing (127) or non-executable (126) program.
func checkExec(std stdio, name, p string, f *file) int {
	switch {
	case f == nil:
		fmt.Fprintf(std.err, "sh: %s: command not found\n", name)
		return 127
	case !f.exec:
		fmt.Fprintf(std.err, "sh: %s: Permission denied\n", p)
		return 126
	}
	return 0
}

// bDisown detaches the agent started by the last "&" from the session.
func bDisown(sh *shell, _ []string, _ stdio, _ cmdCtx) int {
	if p := sh.lastBgProc; p != nil && sh.sess.untie(p) {
		*sh.detached = true
	}
	return 0
}

// procMatch reports whether pattern selects the running agent (by name, or
// by command line with -f), returning it.
func (sh *shell) procMatch(pattern string, full bool) *agentProc {
	sh.h.mu.Lock()
	defer sh.h.mu.Unlock()
	p := sh.h.proc
	if p == nil || pattern == "" {
		return nil
	}
	subject := path.Base(strings.Fields(p.cmdline)[0])
	if full {
		subject = p.cmdline
	}
	if strings.Contains(subject, pattern) {
		return p
	}
	return nil
}

// bPkill is pkill [-f] [-SIGNAL] PATTERN (the pattern is a substring).
func bPkill(sh *shell, args []string, std stdio, cc cmdCtx) int {
	full, pattern := pgrepArgs(args)
	p := sh.procMatch(pattern, full)
	if p == nil {
		return 1
	}
	if p.root && !cc.root {
		fmt.Fprintf(std.err, "pkill: killing pid %d failed: Operation not permitted\n", p.pid)
		return 3
	}
	sh.h.stopAgent(p)
	return 0
}

// bPgrep is pgrep [-f] PATTERN: prints the agent's pid when it matches.
func bPgrep(sh *shell, args []string, std stdio, _ cmdCtx) int {
	full, pattern := pgrepArgs(args)
	p := sh.procMatch(pattern, full)
	if p == nil {
		return 1
	}
	fmt.Fprintln(std.out, p.pid)
	return 0
}

func pgrepArgs(args []string) (full bool, pattern string) {
	for _, a := range args[1:] {
		switch {
		case a == "-f":
			full = true
		case strings.HasPrefix(a, "-"):
		default:
			pattern = a
		}
	}
	return full, pattern
}

// bKill is kill [-0|-SIGNAL|-s SIGNAL] PID...: -0 tests that the agent's pid
// lives; other signals stop it.
func bKill(sh *shell, args []string, std stdio, cc cmdCtx) int {
	probe := false
	var pids []string
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-0":
			probe = true
		case a == "-s":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			pids = append(pids, a)
		}
	}
	status := 0
	for _, s := range pids {
		pid, _ := strconv.Atoi(strings.TrimSpace(s))
		sh.h.mu.Lock()
		p := sh.h.proc
		sh.h.mu.Unlock()
		switch {
		case p == nil || p.pid != pid:
			fmt.Fprintf(std.err, "sh: kill: (%s) - No such process\n", s)
			status = 1
		case p.root && !cc.root:
			fmt.Fprintf(std.err, "sh: kill: (%s) - Operation not permitted\n", s)
			status = 1
		case !probe:
			sh.h.stopAgent(p)
		}
	}
	return status
}

// bCurl is curl [-fsSL…] [-o FILE|-O] URL: a URL on the agent's localhost
// port asks the agent (exit 7 when it does not listen, 22 with -f on an
// error status); any other URL downloads a small file.
func bCurl(sh *shell, args []string, std stdio, cc cmdCtx) int {
	var url, out string
	fail, quiet, showErr, remote := false, false, false, false
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--output":
			i++
			out = argAt(args, i)
		case a == "--fail":
			fail = true
		case a == "--silent":
			quiet = true
		case a == "--show-error":
			showErr = true
		case a == "--remote-name":
			remote = true
		case curlArgFlags[a]:
			i++
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, c := range a[1:] {
				switch c {
				case 'f':
					fail = true
				case 's':
					quiet = true
				case 'S':
					showErr = true
				case 'O':
					remote = true
				case 'o':
					i++
					out = argAt(args, i)
				case 'X', 'H', 'd', 'm', 'u', 'A', 'w', 'e', 'T', 'r':
					i++
				}
			}
		default:
			url = a
		}
	}
	if remote && out == "" {
		out = path.Base(url)
	}
	return sh.fetch(url, out, std, cc, &fetchCurl{fail: fail, quiet: quiet && !showErr})
}

var curlArgFlags = map[string]bool{"--connect-timeout": true, "--max-time": true, "--retry": true,
	"--retry-delay": true, "--retry-max-time": true, "--request": true, "--header": true, "--data": true,
	"--write-out": true, "--user": true, "--user-agent": true, "--proto": true, "--proxy": true}

func argAt(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

type fetchCurl struct{ fail, quiet bool }

// bWget is wget [-q] [-O FILE|-O -] URL.
func bWget(sh *shell, args []string, std stdio, cc cmdCtx) int {
	var url, out string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "--output-document="):
			out = strings.TrimPrefix(a, "--output-document=")
		case a == "-O" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "O"):
			i++
			out = argAt(args, i)
		case strings.HasPrefix(a, "-") && strings.HasSuffix(a, "O-"):
			out = "-"
		case a == "-T" || a == "-t":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			url = a
		}
	}
	if out == "" {
		out = path.Base(url)
	}
	if out == "-" {
		out = ""
	}
	return sh.fetch(url, out, std, cc, nil)
}

// fetch implements curl (non-nil) and wget: GET url into out ("" is
// stdout).
func (sh *shell) fetch(url, out string, std stdio, cc cmdCtx, curl *fetchCurl) int {
	isCurl := curl != nil
	say := func(curlMsg, wgetMsg string, curlExit, wgetExit int) int {
		if !isCurl {
			fmt.Fprintln(std.err, wgetMsg)
			return wgetExit
		}
		if !curl.quiet {
			fmt.Fprintln(std.err, curlMsg)
		}
		return curlExit
	}
	if url == "" {
		return say("curl: no URL specified!", "wget: missing URL", 2, 1)
	}
	spec := sh.h.agentSpec()
	body := "sim download of " + url + "\n"
	if p, ok := agentURL(spec, url); ok {
		if !sh.h.agentListening(spec) {
			return say(fmt.Sprintf("curl: (7) Failed to connect to localhost port %d after 0 ms: Couldn't connect to server", spec.Port),
				"failed: Connection refused.", 7, 4)
		}
		status, b := agentAnswer(spec, "GET", p)
		if status >= 400 && (!isCurl || curl.fail) {
			return say(fmt.Sprintf("curl: (22) The requested URL returned error: %d", status),
				fmt.Sprintf("ERROR %d: %s.", status, http.StatusText(status)), 22, 8)
		}
		body = b
	} else if strings.Contains(url, "://localhost") || strings.Contains(url, "://127.0.0.1") {
		return say("curl: (7) Failed to connect to localhost: Couldn't connect to server", "failed: Connection refused.", 7, 4)
	}
	if out == "" {
		io.WriteString(std.out, body)
		return 0
	}
	if err := sh.h.writeFile(out, []byte(body), cc.root, false); err != nil {
		return say("curl: (23) Failure writing output to destination", fmt.Sprintf("%s: %v", out, err), 23, 3)
	}
	return 0
}
