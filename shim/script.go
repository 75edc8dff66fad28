package shim

import "strings"

// The commands a Starter runs on a host. They are plain POSIX sh (no
// here-documents, subshells or compound commands), wrapped in `sh -c` so the
// login shell does not matter, and in `sudo -n` when the login user is not
// root.

// shQuote quotes s as one sh word.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type commands struct {
	spec AgentSpec
	sudo bool
}

// wrap runs script with sh (as root through sudo -n when needed).
func (c commands) wrap(script string) string {
	cmd := "sh -c " + shQuote(script)
	if c.sudo {
		cmd = "sudo -n " + cmd
	}
	return cmd
}

// probeSystemd exits 0 when systemd runs the host (sd_booted's test), 1
// when it does not.
func (c commands) probeSystemd() string { return c.wrap("test -d /run/systemd/system") }

// unitPath is where the unit file is written.
func (c commands) unitPath() string { return "/etc/systemd/system/" + c.spec.unitName() }

// writeUnit writes the unit file from the session's stdin.
func (c commands) writeUnit() string { return c.wrap("cat > " + c.unitPath()) }

// startSystemd (re)starts the agent's unit and enables it at boot.
func (c commands) startSystemd() string {
	u := c.spec.unitName()
	return c.wrap("systemctl daemon-reload && systemctl enable " + u + " && systemctl restart " + u)
}

// startDetached starts the agent in its own session (setsid), immune to
// hangups (nohup), in the background with its output appended to the log
// file, and records its pid. It returns at once.
func (c commands) startDetached() string {
	var b strings.Builder
	for _, kv := range c.spec.envList() {
		b.WriteString(kv[0] + "=" + shQuote(kv[1]) + " ")
	}
	b.WriteString("setsid nohup " + c.spec.Command + " >>" + c.spec.LogFile + " 2>&1 & echo $! >" + c.spec.PIDFile)
	return c.wrap(b.String())
}
