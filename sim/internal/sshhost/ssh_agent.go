package sshhost

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// AgentSpec describes the host agent the fake hosts recognise: a process
// whose executable's base name is Binary, serving HTTP on 127.0.0.1:Port
// (reached through direct-tcpip or curl on the host).
type AgentSpec struct {
	// Binary is the executable's base name ("dstack-shim").
	Binary string
	// Port is the TCP port of its HTTP API on localhost (10998).
	Port int
	// HealthPath answers GET with HealthStatus and, on 200, the JSON body
	// {"service": Service, "version": Version}; other paths answer 404.
	HealthPath string
	// Service and Version fill the health body (default: Binary and, for
	// dstack-shim, 0.19.41).
	Service, Version string
	// ReadyAfter is how long after the process starts the port opens
	// (default 0: at once).
	ReadyAfter time.Duration
	// HealthStatus is the health endpoint's status (0: 200). Use 500 for an
	// agent that runs but reports unhealthy.
	HealthStatus int
	// NeverListens makes the process run without ever opening its port.
	NeverListens bool
}

// DefaultAgentSpec is dstack-shim: port 10998, GET /api/healthcheck →
// 200 {"service":"dstack-shim","version":"0.19.41"}.
func DefaultAgentSpec() AgentSpec {
	return AgentSpec{Binary: "dstack-shim", Port: 10998, HealthPath: "/api/healthcheck",
		Service: "dstack-shim", Version: "0.19.41", HealthStatus: http.StatusOK}
}

func (s AgentSpec) withDefaults() AgentSpec {
	d := DefaultAgentSpec()
	if s.Binary == "" {
		s.Binary = d.Binary
	}
	if s.Port == 0 {
		s.Port = d.Port
	}
	if s.HealthPath == "" {
		s.HealthPath = d.HealthPath
	}
	if s.Service == "" {
		s.Service = s.Binary
	}
	if s.Version == "" && s.Binary == d.Binary {
		s.Version = d.Version
	}
	if s.HealthStatus == 0 {
		s.HealthStatus = http.StatusOK
	}
	return s
}

// agentProc is a running agent process.
type agentProc struct {
	pid      int
	detached bool
	unit     string // systemd unit that runs it, or ""
	root     bool   // runs as root
	cmdline  string
	started  time.Time
	dead     chan struct{}
}

func (h *Host) agentSpec() AgentSpec {
	h.mu.Lock()
	o := h.agent
	h.mu.Unlock()
	if o != nil {
		return *o
	}
	return h.net.Agent()
}

// AgentStarts counts agent processes launched on the host: every systemd
// start or restart that (re)started it, and every other launch, including a
// second one while the first runs (it exits at once: its port is taken).
func (h *Host) AgentStarts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.starts
}

// AgentRunning reports whether the agent process runs.
func (h *Host) AgentRunning() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.proc != nil
}

// AgentDetached reports whether the running agent survives its SSH session
// (false when none runs).
func (h *Host) AgentDetached() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.proc != nil && h.proc.detached
}

// KillAgent kills the running agent (a crash); it reports whether one ran.
func (h *Host) KillAgent() bool { return h.stopAgent(nil) }

// launchAgent starts the agent unless one runs: a second launch is counted
// and exits at once (its port is taken), returning the running process and
// false. pid is the process's pid (a background job's), or 0 for a new one.
// Callers do not hold h.mu.
func (h *Host) launchAgent(detached bool, unit string, root bool, cmdline string, pid int) (*agentProc, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.starts++
	if h.proc != nil {
		return h.proc, false
	}
	if pid == 0 {
		h.lastPID += 1000
		pid = h.lastPID
	}
	p := &agentProc{pid: pid, detached: detached, unit: unit, root: root, cmdline: cmdline,
		started: h.net.clock.Now(), dead: make(chan struct{})}
	h.proc = p
	return p, true
}

// stopAgent stops p (nil: whichever runs); it reports whether it did.
func (h *Host) stopAgent(p *agentProc) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.proc == nil || (p != nil && h.proc != p) {
		return false
	}
	close(h.proc.dead)
	h.proc = nil
	return true
}

// newPID returns a pid for a process that is not the agent.
func (h *Host) newPID() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastPID += 7
	return h.lastPID
}

// agentListening reports whether the agent's port is open now.
func (h *Host) agentListening(spec AgentSpec) bool {
	h.mu.Lock()
	p := h.proc
	h.mu.Unlock()
	if p == nil || spec.NeverListens {
		return false
	}
	return !h.net.clock.Now().Before(p.started.Add(spec.ReadyAfter))
}

// agentAnswer is the agent's HTTP answer to method and path.
func agentAnswer(spec AgentSpec, method, path string) (int, string) {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if path != spec.HealthPath {
		return http.StatusNotFound, `{"error":"not found"}`
	}
	if method != http.MethodGet && method != http.MethodHead {
		return http.StatusMethodNotAllowed, `{"error":"method not allowed"}`
	}
	if spec.HealthStatus != 0 && spec.HealthStatus != http.StatusOK {
		return spec.HealthStatus, `{"error":"` + http.StatusText(spec.HealthStatus) + `"}`
	}
	b, _ := json.Marshal(map[string]string{"service": spec.Service, "version": spec.Version})
	return http.StatusOK, string(b)
}

// serveAgentHTTP answers HTTP/1.1 requests read from rw (a direct-tcpip
// channel) while the agent listens, with keep-alive, until EOF.
func (h *Host) serveAgentHTTP(rw io.ReadWriter) {
	br := bufio.NewReader(rw)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, 1<<20))
		_ = req.Body.Close()
		spec := h.agentSpec()
		if !h.agentListening(spec) {
			return // the process died: connection reset
		}
		status, body := agentAnswer(spec, req.Method, req.URL.RequestURI())
		resp := &http.Response{
			StatusCode: status, ProtoMajor: 1, ProtoMinor: 1, Request: req,
			Header: http.Header{"Content-Type": {"application/json"},
				"Date": {h.net.clock.Now().UTC().Format(http.TimeFormat)}},
			ContentLength: int64(len(body)), Body: io.NopCloser(strings.NewReader(body)),
			Close: req.Close,
		}
		if err := resp.Write(rw); err != nil || req.Close {
			return
		}
	}
}

// agentURL reports whether url (as given to curl or wget) points at the
// agent's port on localhost, and returns its path.
func agentURL(spec AgentSpec, url string) (path string, ok bool) {
	rest, found := strings.CutPrefix(url, "http://")
	if !found {
		return "", false
	}
	hostport, path, _ := strings.Cut(rest, "/")
	for _, lh := range []string{"localhost", "127.0.0.1", "[::1]"} {
		if hostport == lh+":"+strconv.Itoa(spec.Port) {
			return "/" + path, true
		}
	}
	return "", false
}

func isLocalhost(host string) bool {
	switch host {
	case "localhost", "127.0.0.1", "::1", "ip6-localhost", "0.0.0.0":
		return true
	}
	return false
}
