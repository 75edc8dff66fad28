package shim

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Step is one command run on the host as a separate, checked SSH exec.
type Step struct {
	// Name is shown in logs and in *StepError.
	Name string
	// Command is a POSIX sh script; it runs as `sh -c '<Command>'` (under
	// `sudo -n` when the login user is not root), whatever the login shell.
	Command string
	// Timeout bounds the step (0: the Starter's Timeouts.Step).
	Timeout time.Duration
}

// AgentSpec says how to install, start and check a host agent.
type AgentSpec struct {
	// Name names the service: the systemd unit <Name>.service, the default
	// pid and log files. Letters, digits, '.', '_', '-'.
	Name string
	// Install runs in order, each step checked, when the agent is not
	// healthy yet (download, directories).
	Install []Step
	// Command runs the agent in the foreground (ExecStart of the unit, or
	// the command started with setsid/nohup). Words are split by sh.
	Command string
	// Env is the agent's environment (written into the unit, or set on the
	// command line). Names must be shell names; values may not contain a
	// single quote, a double quote, a backslash, '%' or a newline.
	Env map[string]string
	// HealthPort is the agent's HTTP port on the host's localhost (1-65535).
	HealthPort int
	// HealthPath is requested with GET ("/api/healthcheck").
	HealthPath string
	// Service, when set, must equal the "service" field of the health
	// answer's JSON body; "" accepts any 200.
	Service string
	// Unit is the systemd unit file text; "" generates one (Restart=always).
	Unit string
	// PIDFile and LogFile are used without systemd (defaults
	// /run/<Name>.pid and /var/log/<Name>.log).
	PIDFile, LogFile string
}

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	pathRE   = regexp.MustCompile(`^/[A-Za-z0-9._/-]*$`)
)

// validate checks the spec and fills defaults.
func (s AgentSpec) validate() (AgentSpec, error) {
	var errs []error
	if !nameRE.MatchString(s.Name) {
		errs = append(errs, fmt.Errorf("name %q: want letters, digits, '.', '_', '-'", s.Name))
	}
	if strings.TrimSpace(s.Command) == "" {
		errs = append(errs, errors.New("empty command"))
	}
	if s.HealthPort < 1 || s.HealthPort > 65535 {
		errs = append(errs, fmt.Errorf("health port %d out of range", s.HealthPort))
	}
	if !strings.HasPrefix(s.HealthPath, "/") {
		errs = append(errs, fmt.Errorf("health path %q must start with /", s.HealthPath))
	}
	for k, v := range s.Env {
		if !envKeyRE.MatchString(k) || strings.ContainsAny(v, "'\"\\%\n\r") {
			errs = append(errs, fmt.Errorf("env %s: bad name or value", k))
		}
	}
	if s.PIDFile == "" {
		s.PIDFile = "/run/" + s.Name + ".pid"
	}
	if s.LogFile == "" {
		s.LogFile = "/var/log/" + s.Name + ".log"
	}
	for _, p := range []string{s.PIDFile, s.LogFile} {
		if !pathRE.MatchString(p) {
			errs = append(errs, fmt.Errorf("path %q: want an absolute path of letters, digits, '.', '_', '-'", p))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("shim: agent spec: %w", err)
	}
	return s, nil
}

// envList returns Env as NAME=value pairs sorted by name.
func (s AgentSpec) envList() [][2]string {
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][2]string, len(keys))
	for i, k := range keys {
		out[i] = [2]string{k, s.Env[k]}
	}
	return out
}

// unitName is the systemd unit's name.
func (s AgentSpec) unitName() string { return s.Name + ".service" }

// unitText is Unit, or a generated unit: restarted 3 s after it exits,
// giving up after about an hour of crash-looping (as dstack's SSH-fleet
// unit does), output appended to LogFile.
func (s AgentSpec) unitText() string {
	if s.Unit != "" {
		return s.Unit
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[Unit]\nDescription=%s (started by gpufleet)\nAfter=network-online.target\nWants=network-online.target\n", s.Name)
	b.WriteString("StartLimitIntervalSec=3600\nStartLimitBurst=1080\n\n[Service]\nType=simple\n")
	for _, kv := range s.envList() {
		fmt.Fprintf(&b, "Environment=\"%s=%s\"\n", kv[0], kv[1])
	}
	fmt.Fprintf(&b, "ExecStart=%s\nRestart=always\nRestartSec=3\n", s.Command)
	fmt.Fprintf(&b, "StandardOutput=append:%s\nStandardError=append:%s\n", s.LogFile, s.LogFile)
	b.WriteString("\n[Install]\nWantedBy=multi-user.target\n")
	return b.String()
}
