package sshhost

import (
	"fmt"
	"path"
	"strings"
)

// systemctl on the fake hosts (present only when the host has systemd).
// Unit files are read from /etc/systemd/system, /lib/systemd/system,
// /usr/lib/systemd/system and /run/systemd/system; a unit whose ExecStart
// names the agent binary runs the agent, detached. Mutating verbs need root.

var unitDirs = []string{"/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system", "/run/systemd/system"}

func unitName(u string) string {
	if strings.Contains(u, ".") {
		return u
	}
	return u + ".service"
}

// unit returns a unit file's content and whether it exists.
func (h *Host) unit(u string) (string, bool) {
	for _, d := range unitDirs {
		if data, err := h.readFile(d + "/" + u); err == nil {
			return string(data), true
		}
	}
	return "", false
}

// agentBinary returns the agent executable a unit's ExecStart runs, or "".
func agentBinary(unitText, binary string) string {
	for _, line := range strings.Split(unitText, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "ExecStart=")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(strings.TrimLeft(v, "-@:+!")) {
			f = strings.Trim(f, `"'`)
			if path.Base(f) == binary {
				return f
			}
		}
	}
	return ""
}

// progSystemctl is systemctl VERB [--now] [-q] UNIT...
func progSystemctl(c *call) int {
	root := c.sh.root
	var verb string
	var units []string
	now, quiet := false, false
	for _, a := range c.args[1:] {
		switch {
		case a == "--now":
			now = true
		case a == "-q" || a == "--quiet":
			quiet = true
		case a == "--user":
			c.errf("Failed to connect to bus: No medium found\n")
			return 1
		case strings.HasPrefix(a, "-"):
		case verb == "":
			verb = a
		default:
			units = append(units, unitName(a))
		}
	}
	switch verb {
	case "daemon-reload", "daemon-reexec", "reset-failed":
		if !root {
			c.errf("Failed to %s: Interactive authentication required.\n", verb)
			return 1
		}
		return 0
	case "start", "restart", "try-restart", "reload-or-restart", "stop", "enable", "disable", "reload", "kill":
		if !root {
			c.errf("Failed to %s %s: Interactive authentication required.\n", verb, strings.Join(units, " "))
			return 1
		}
		for _, u := range units {
			if st := c.unitAction(verb, u, now); st != 0 {
				return st
			}
		}
		return 0
	case "is-active", "is-enabled", "status":
		status := 0
		for _, u := range units {
			status = max(status, c.unitQuery(verb, u, quiet))
		}
		return status
	}
	c.errf("Unknown command verb %s.\n", verb)
	return 1
}

func (c *call) unitAction(verb, u string, now bool) int {
	h := c.sh.x.h
	text, ok := h.unit(u)
	switch verb {
	case "enable", "disable":
		if !ok {
			c.errf("Failed to %s unit: Unit file %s does not exist.\n", verb, u)
			return 1
		}
		h.mu.Lock()
		h.enabled[u] = verb == "enable"
		h.mu.Unlock()
		if verb == "enable" {
			c.errf("Created symlink /etc/systemd/system/multi-user.target.wants/%s → /etc/systemd/system/%s.\n", u, u)
		}
		if !now {
			return 0
		}
		verb = map[string]string{"enable": "start", "disable": "stop"}[verb]
	}
	if !ok {
		c.errf("Failed to %s %s: Unit %s not found.\n", verb, u, u)
		return 5
	}
	bin := agentBinary(text, h.agentSpec().Binary)
	if bin == "" {
		h.mu.Lock()
		defer h.mu.Unlock()
		if verb == "stop" || verb == "kill" {
			delete(h.units, u)
		} else if verb != "try-restart" && verb != "reload" {
			h.units[u] = "active"
		}
		return 0
	}
	return c.agentUnitAction(verb, u, bin)
}

// agentUnitAction runs start/restart/stop on the unit that runs the agent.
func (c *call) agentUnitAction(verb, u, bin string) int {
	h := c.sh.x.h
	h.mu.Lock()
	p := h.proc
	mine := p != nil && p.unit == u
	h.mu.Unlock()
	switch verb {
	case "stop", "kill":
		if mine {
			h.stopAgent(p)
		}
		return 0
	case "reload":
		return 0
	case "start":
		if mine {
			return 0 // already active: systemd does nothing
		}
	case "try-restart":
		if !mine {
			return 0
		}
		fallthrough
	default: // restart, reload-or-restart
		if mine {
			h.stopAgent(p)
		}
	}
	binPath, f := h.lookPath(bin)
	if f == nil || !f.exec {
		h.mu.Lock()
		h.units[u] = "failed"
		h.mu.Unlock()
		c.errf("Job for %s failed because the control process exited with error code.\n"+
			"See \"systemctl status %s\" and \"journalctl -xeu %s\" for details.\n", u, u, u)
		return 1
	}
	_, started := h.launchAgent(true, u, true, binPath, 0)
	h.mu.Lock()
	if started {
		delete(h.units, u)
	} else {
		h.units[u] = "failed" // the port was taken by an agent started otherwise
	}
	h.mu.Unlock()
	if started {
		c.sh.x.detached.Store(true)
	}
	return 0
}

// unitState is "active", "inactive" or "failed".
func (h *Host) unitState(u string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.proc != nil && h.proc.unit == u {
		return "active"
	}
	if s, ok := h.units[u]; ok {
		return s
	}
	return "inactive"
}

func (c *call) unitQuery(verb, u string, quiet bool) int {
	h := c.sh.x.h
	_, exists := h.unit(u)
	state := h.unitState(u)
	say := func(s string) {
		if !quiet {
			c.outf("%s\n", s)
		}
	}
	switch verb {
	case "is-active":
		say(state)
	case "is-enabled":
		h.mu.Lock()
		on := h.enabled[u]
		h.mu.Unlock()
		switch {
		case !exists:
			c.errf("Failed to get unit file state for %s: No such file or directory\n", u)
			return 1
		case on:
			say("enabled")
			return 0
		}
		say("disabled")
		return 1
	default: // status
		if !exists && state == "inactive" {
			c.errf("Unit %s could not be found.\n", u)
			return 4
		}
		say(fmt.Sprintf("● %s\n     Loaded: loaded (/etc/systemd/system/%s)\n     Active: %s", u, u,
			map[string]string{"active": "active (running)", "inactive": "inactive (dead)", "failed": "failed (Result: exit-code)"}[state]))
	}
	if state == "active" {
		return 0
	}
	return 3
}
