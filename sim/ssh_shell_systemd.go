package sim

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

func bSystemctl(sh *shell, args []string, std stdio, cc cmdCtx) int {
	var verb string
	var units []string
	now, quiet := false, false
	for _, a := range args[1:] {
		switch {
		case a == "--now":
			now = true
		case a == "-q" || a == "--quiet":
			quiet = true
		case a == "--user":
			fmt.Fprintln(std.err, "Failed to connect to bus: No medium found")
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
		if !cc.root {
			fmt.Fprintf(std.err, "Failed to %s: Interactive authentication required.\n", verb)
			return 1
		}
		return 0
	case "start", "restart", "try-restart", "reload-or-restart", "stop", "enable", "disable", "reload", "kill":
		if !cc.root {
			fmt.Fprintf(std.err, "Failed to %s %s: Interactive authentication required.\n", verb, strings.Join(units, " "))
			return 1
		}
		for _, u := range units {
			if st := sh.unitAction(verb, u, now, std); st != 0 {
				return st
			}
		}
		return 0
	case "is-active", "is-enabled", "status":
		status := 0
		for _, u := range units {
			status = max(status, sh.unitQuery(verb, u, quiet, std))
		}
		return status
	}
	fmt.Fprintf(std.err, "Unknown command verb %s.\n", verb)
	return 1
}

func (sh *shell) unitAction(verb, u string, now bool, std stdio) int {
	text, ok := sh.h.unit(u)
	switch verb {
	case "enable", "disable":
		if !ok {
			fmt.Fprintf(std.err, "Failed to %s unit: Unit file %s does not exist.\n", verb, u)
			return 1
		}
		sh.h.mu.Lock()
		sh.h.enabled[u] = verb == "enable"
		sh.h.mu.Unlock()
		if verb == "enable" {
			fmt.Fprintf(std.err, "Created symlink /etc/systemd/system/multi-user.target.wants/%s → /etc/systemd/system/%s.\n", u, u)
		}
		if !now {
			return 0
		}
		verb = map[string]string{"enable": "start", "disable": "stop"}[verb]
	}
	if !ok {
		fmt.Fprintf(std.err, "Failed to %s %s: Unit %s not found.\n", verb, u, u)
		return 5
	}
	bin := agentBinary(text, sh.h.agentSpec().Binary)
	if bin == "" {
		sh.h.mu.Lock()
		defer sh.h.mu.Unlock()
		if verb == "stop" || verb == "kill" {
			delete(sh.h.units, u)
		} else if verb != "try-restart" && verb != "reload" {
			sh.h.units[u] = "active"
		}
		return 0
	}
	return sh.agentUnitAction(verb, u, bin, std)
}

// agentUnitAction runs start/restart/stop on the unit that runs the agent.
func (sh *shell) agentUnitAction(verb, u, bin string, std stdio) int {
	h := sh.h
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
		fmt.Fprintf(std.err, "Job for %s failed because the control process exited with error code.\n"+
			"See \"systemctl status %s\" and \"journalctl -xeu %s\" for details.\n", u, u, u)
		return 1
	}
	_, started := h.launchAgent(true, u, true, binPath)
	h.mu.Lock()
	if started {
		delete(h.units, u)
	} else {
		h.units[u] = "failed" // the port was taken by an agent started otherwise
	}
	h.mu.Unlock()
	if started {
		*sh.detached = true
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

func (sh *shell) unitQuery(verb, u string, quiet bool, std stdio) int {
	_, exists := sh.h.unit(u)
	state := sh.h.unitState(u)
	say := func(s string) {
		if !quiet {
			fmt.Fprintln(std.out, s)
		}
	}
	switch verb {
	case "is-active":
		say(state)
	case "is-enabled":
		sh.h.mu.Lock()
		on := sh.h.enabled[u]
		sh.h.mu.Unlock()
		switch {
		case !exists:
			fmt.Fprintf(std.err, "Failed to get unit file state for %s: No such file or directory\n", u)
			return 1
		case on:
			say("enabled")
			return 0
		}
		say("disabled")
		return 1
	default: // status
		if !exists && state == "inactive" {
			fmt.Fprintf(std.err, "Unit %s could not be found.\n", u)
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
