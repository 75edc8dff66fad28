package sshhost

// Network and checksum commands of the fake hosts: curl, wget, sha256sum.

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
)

// DownloadContent returns the bytes the fake hosts' curl and wget download
// from url, for any URL but the agent's own port on localhost:
// "sim download of <url>\n". The same URL always gives the same bytes, so a
// test can compute the SHA-256 digest an install step checks.
func DownloadContent(url string) []byte { return []byte("sim download of " + url + "\n") }

// progCurl is curl [-fsSL…] [-o FILE|-O] URL: a URL on the agent's
// localhost port asks the agent (exit 7 when it does not listen, 22 with -f
// on an error status); any other URL downloads DownloadContent(URL).
func progCurl(c *call) int {
	var url, out string
	fail, quiet, showErr, remote := false, false, false, false
	for i := 1; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case a == "--output":
			i++
			out = argAt(c.args, i)
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
			for _, ch := range a[1:] {
				switch ch {
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
					out = argAt(c.args, i)
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
	return c.fetch(url, out, &fetchCurl{fail: fail, quiet: quiet && !showErr})
}

var curlArgFlags = map[string]bool{"--connect-timeout": true, "--max-time": true, "--retry": true,
	"--retry-delay": true, "--retry-max-time": true, "--request": true, "--header": true, "--data": true,
	"--write-out": true, "--user": true, "--user-agent": true, "--proto": true, "--proxy": true}

type fetchCurl struct{ fail, quiet bool }

// progWget is wget [-q] [-O FILE|-O -] URL.
func progWget(c *call) int {
	var url, out string
	for i := 1; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case strings.HasPrefix(a, "--output-document="):
			out = strings.TrimPrefix(a, "--output-document=")
		case a == "-O" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "O"):
			i++
			out = argAt(c.args, i)
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
	return c.fetch(url, out, nil)
}

// fetch implements curl (non-nil) and wget: GET url into out ("" is
// stdout).
func (c *call) fetch(url, out string, curl *fetchCurl) int {
	isCurl := curl != nil
	say := func(curlMsg, wgetMsg string, curlExit, wgetExit int) int {
		if !isCurl {
			c.errf("%s\n", wgetMsg)
			return wgetExit
		}
		if !curl.quiet {
			c.errf("%s\n", curlMsg)
		}
		return curlExit
	}
	if url == "" {
		return say("curl: no URL specified!", "wget: missing URL", 2, 1)
	}
	h := c.sh.x.h
	spec := h.agentSpec()
	body := DownloadContent(url)
	if p, ok := agentURL(spec, url); ok {
		if !h.agentListening(spec) {
			return say(fmt.Sprintf("curl: (7) Failed to connect to localhost port %d after 0 ms: Couldn't connect to server", spec.Port),
				"failed: Connection refused.", 7, 4)
		}
		status, b := agentAnswer(spec, "GET", p)
		if status >= 400 && (!isCurl || curl.fail) {
			return say(fmt.Sprintf("curl: (22) The requested URL returned error: %d", status),
				fmt.Sprintf("ERROR %d: %s.", status, http.StatusText(status)), 22, 8)
		}
		body = []byte(b)
	} else if strings.Contains(url, "://localhost") || strings.Contains(url, "://127.0.0.1") {
		return say("curl: (7) Failed to connect to localhost: Couldn't connect to server", "failed: Connection refused.", 7, 4)
	}
	if out == "" {
		_, _ = c.stdout.Write(body)
		return 0
	}
	if err := h.writeFile(c.file(out), body, c.sh.root, false); err != nil {
		return say("curl: (23) Failure writing output to destination", fmt.Sprintf("%s: %v", out, err), 23, 3)
	}
	return 0
}

// progSha256sum prints "DIGEST  FILE" for each file (stdin for none or
// -), or with -c (--check) reads such lines and checks each file: "FILE:
// OK" or "FILE: FAILED", exit 1 when one fails. --quiet and --status
// silence the OK lines and all lines.
func progSha256sum(c *call) int {
	check, quiet, status := false, false, false
	var files []string
	for _, a := range c.args[1:] {
		switch a {
		case "-c", "--check":
			check = true
		case "--quiet":
			quiet = true
		case "--status":
			status = true
		case "-b", "-t", "--binary", "--text", "--strict", "-w", "--warn", "--tag":
		default:
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	exit := 0
	for _, f := range files {
		data, err := c.readArg(f)
		if err != nil {
			c.errf("sha256sum: %s: %v\n", f, err)
			exit = 1
			continue
		}
		if !check {
			c.outf("%x  %s\n", sha256.Sum256(data), f)
			continue
		}
		if c.checkSums(data, quiet, status) != 0 {
			exit = 1
		}
	}
	return exit
}

// checkSums checks the lines "DIGEST  FILE" of list.
func (c *call) checkSums(list []byte, quiet, silent bool) int {
	failed, missing, lines := 0, 0, 0
	sc := bufio.NewScanner(strings.NewReader(string(list)))
	for sc.Scan() {
		digest, name, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		name = strings.TrimPrefix(strings.TrimLeft(name, " "), "*")
		want, err := hex.DecodeString(digest)
		if !ok || err != nil || len(want) != sha256.Size || name == "" {
			continue
		}
		lines++
		data, err := c.sh.x.h.readFile(c.file(name))
		switch {
		case err != nil:
			missing++
			if !silent {
				c.errf("sha256sum: %s: %v\n", name, err)
				c.outf("%s: FAILED open or read\n", name)
			}
		case sha256.Sum256(data) != [sha256.Size]byte(want):
			failed++
			if !silent {
				c.outf("%s: FAILED\n", name)
			}
		case !quiet && !silent:
			c.outf("%s: OK\n", name)
		}
	}
	switch {
	case lines == 0:
		c.errf("sha256sum: no properly formatted checksum lines found\n")
		return 1
	case silent:
	case missing > 0:
		c.errf("sha256sum: WARNING: %d listed file could not be read\n", missing)
	case failed > 0:
		c.errf("sha256sum: WARNING: %d computed checksum did NOT match\n", failed)
	}
	if failed+missing > 0 {
		return 1
	}
	return 0
}

// readArg reads a file operand, or stdin for "-".
func (c *call) readArg(f string) ([]byte, error) {
	if f == "-" {
		return io.ReadAll(c.input())
	}
	return c.sh.x.h.readFile(c.file(f))
}
