package sshhost

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Host is a fake SSH host: an x/crypto/ssh server with public-key auth
// only, a bash shell for "exec" requests (mvdan.cc/sh/v3's interpreter over
// the host's memory: sshhost_shell_exec.go lists the commands it knows;
// "pty-req", "shell" and "subsystem" are refused), an in-memory file
// system, one tracked agent process (see AgentSpec), and
// direct-tcpip to the agent's localhost port (and, on a Jump host, to the
// network's other hosts). All methods are safe for concurrent use.
//
// The agent is detached (it survives its SSH session and connection) when
// started by a systemd unit, or in the background ("&", setsid -f) with
// both its stdout and stderr redirected away from the session (a file,
// /dev/null). In the foreground, or in the background still writing to the
// session's stdout or stderr (nohup, setsid and disown do not change that
// without a terminal), it is tied to the session, as sshd ends a session
// only once no process holds its output: the session stays open while it
// runs, and it dies when the session or the connection closes.
type Host struct {
	net *Network
	cfg HostConfig

	mu      sync.Mutex
	sched   HostSchedule
	systemd bool
	keyGen  int
	signer  ssh.Signer
	agent   *AgentSpec // per-host override
	files   map[string]*file
	dirs    map[string]bool
	cmds    []*ExecRecord
	rules   []*cmdRule
	proc    *agentProc // the running agent, or nil
	starts  int
	lastPID int
	units   map[string]string // unit → "active" or "failed" (the agent's unit: only "failed")
	enabled map[string]bool
}

type file struct {
	data []byte
	exec bool
}

// ExecRecord is one "exec" request a host ran.
type ExecRecord struct {
	// Time is when the command started (cloud time).
	Time time.Time
	// User is the login user.
	User string
	// Command is the exec request's command line, as sent.
	Command string
	// Stdin is what the command consumed from the session's stdin.
	Stdin []byte
	// Exit is the exit status; -1 while the command runs, or when the
	// session closed before it ended (a foreground agent).
	Exit int
	// Stdout and Stderr are what the command wrote to the session.
	Stdout, Stderr string
	// Detached reports that the command started the agent detached from the
	// session (systemd, or in the background with stdout and stderr
	// redirected away from the session).
	Detached bool
}

// CommandHandler scripts the outcome of a simple command: it gets the
// command (words joined by spaces, after `sudo` and `sh -c` unwrapping and
// without redirections) and the stdin given to it (nil in the background),
// and returns what the command writes and its exit status.
type CommandHandler func(cmd string, stdin []byte) (stdout, stderr string, exit int)

type cmdRule struct {
	match   func(string) bool
	handler CommandHandler
	times   int // 0: every time; else remaining uses
}

func newHost(n *Network, cfg HostConfig) *Host {
	h := &Host{
		net: n, cfg: cfg, sched: cfg.Schedule, systemd: !cfg.NoSystemd, keyGen: cfg.KeyGeneration,
		files: map[string]*file{}, dirs: map[string]bool{},
		units: map[string]string{}, enabled: map[string]bool{},
	}
	h.cfg.Addr = normAddr(cfg.Addr)
	for _, d := range []string{"/", "/etc", "/etc/systemd", "/etc/systemd/system", "/usr", "/usr/local",
		"/usr/local/bin", "/usr/local/sbin", "/usr/bin", "/usr/sbin", "/bin", "/sbin", "/tmp", "/var",
		"/var/log", "/var/tmp", "/run", "/opt", "/root", "/home", h.home(), "/dev"} {
		h.dirs[d] = true
	}
	return h
}

// signerLocked returns the host key, deriving it on first use: a host that
// is never dialled never pays for its key. Callers hold h.mu.
func (h *Host) signerLocked() ssh.Signer {
	if h.signer == nil {
		h.signer = deriveHostKey(h.net.seed, h.cfg.Addr, h.cfg.InstanceID, h.keyGen)
	}
	return h.signer
}

// deriveHostKey derives an ed25519 host key from the network seed, the
// address, the instance id and a rotation generation.
func deriveHostKey(seed uint64, addr, instanceID string, gen int) ssh.Signer {
	sum := sha256.Sum256(fmt.Appendf(nil, "gpufleet-sim host key\x00%d\x00%s\x00%s\x00%d", seed, addr, instanceID, gen))
	signer, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(sum[:]))
	if err != nil {
		panic(err) // an ed25519 key is always accepted
	}
	return signer
}

// Addr returns the host's "ip:port".
func (h *Host) Addr() string { return h.cfg.Addr }

// InstanceID returns the id of the server the host belongs to.
func (h *Host) InstanceID() string { return h.cfg.InstanceID }

// User returns the login user.
func (h *Host) User() string { return h.cfg.User }

// PublicKey returns the host's current ed25519 host key, derived from the
// network seed, the address, the instance id and the key generation (the
// same inputs give the same key), changed by RotateHostKey. The key is made when first needed
// (this call, or the first connection).
func (h *Host) PublicKey() ssh.PublicKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.signerLocked().PublicKey()
}

// RotateHostKey replaces the host key (a reinstalled server, or a new one
// reusing the IP) and returns the new public key; new connections present it.
func (h *Host) RotateHostKey() ssh.PublicKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keyGen++
	h.signer = nil
	return h.signerLocked().PublicKey()
}

// SetSchedule replaces the host's readiness schedule.
func (h *Host) SetSchedule(s HostSchedule) {
	h.mu.Lock()
	h.sched = s
	h.mu.Unlock()
}

// Schedule returns the host's current HostSchedule (see SetSchedule).
func (h *Host) Schedule() HostSchedule {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sched
}

// SetSystemd says whether the host runs systemd (default: !cfg.NoSystemd).
func (h *Host) SetSystemd(on bool) {
	h.mu.Lock()
	h.systemd = on
	h.mu.Unlock()
}

// SetAgent overrides the network's agent spec on this host, e.g. an agent
// whose health answers 500 or that never listens.
func (h *Host) SetAgent(spec AgentSpec) {
	spec = spec.withDefaults()
	h.mu.Lock()
	h.agent = &spec
	h.mu.Unlock()
}

// Commands returns a copy of the exec requests run so far, oldest first.
func (h *Host) Commands() []ExecRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ExecRecord, len(h.cmds))
	for i, r := range h.cmds {
		out[i] = *r
		out[i].Stdin = append([]byte(nil), r.Stdin...)
	}
	return out
}

// OnCommand scripts every simple command containing substr (see
// CommandHandler). The latest matching rule wins; scripted commands have no
// other effect (a scripted agent start starts nothing).
func (h *Host) OnCommand(substr string, handler CommandHandler) {
	h.OnCommandFunc(func(c string) bool { return strings.Contains(c, substr) }, handler)
}

// OnCommandFunc scripts every simple command for which match is true.
func (h *Host) OnCommandFunc(match func(cmd string) bool, handler CommandHandler) {
	h.mu.Lock()
	h.rules = append(h.rules, &cmdRule{match: match, handler: handler})
	h.mu.Unlock()
}

// FailCommand makes the next times simple commands containing substr fail
// with stderr and exit (a flaky download, say); later ones run normally.
func (h *Host) FailCommand(substr string, times int, stderr string, exit int) {
	if times <= 0 {
		return
	}
	h.mu.Lock()
	h.rules = append(h.rules, &cmdRule{
		match:   func(c string) bool { return strings.Contains(c, substr) },
		handler: func(string, []byte) (string, string, int) { return "", stderr, exit },
		times:   times,
	})
	h.mu.Unlock()
}

// rule returns the handler scripted for cmd, consuming one use.
func (h *Host) rule(cmd string) CommandHandler {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.rules) - 1; i >= 0; i-- {
		r := h.rules[i]
		if !r.match(cmd) {
			continue
		}
		if r.times > 0 {
			r.times--
			if r.times == 0 {
				h.rules = append(h.rules[:i], h.rules[i+1:]...)
			}
		}
		return r.handler
	}
	return nil
}

// WriteFile puts a file on the host (seeding a preinstalled binary, say),
// creating its directories.
func (h *Host) WriteFile(path string, data []byte, executable bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	path = h.abs(path)
	h.mkdirAll(parentDir(path))
	h.files[path] = &file{data: append([]byte(nil), data...), exec: executable}
}

// ReadFile returns a file of the host and whether it exists.
func (h *Host) ReadFile(path string) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[h.abs(path)]
	if !ok {
		return nil, false
	}
	return append([]byte(nil), f.data...), true
}

func (h *Host) home() string {
	if h.cfg.User == "root" || h.cfg.User == "" {
		return "/root"
	}
	return "/home/" + h.cfg.User
}

// abs makes p absolute (relative to the home directory) and clean.
func (h *Host) abs(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = h.home() + "/" + p
	}
	return cleanPath(p)
}

func (h *Host) mkdirAll(dir string) {
	for d := dir; !h.dirs[d]; d = parentDir(d) {
		h.dirs[d] = true
	}
}
