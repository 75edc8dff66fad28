package shim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"golang.org/x/crypto/ssh"
)

// Starter starts and checks a host agent over SSH. It implements
// fleet.Agent. It is safe for concurrent use; concurrent Starts for one
// instance id run one after the other, so the agent is started once.
type Starter struct {
	spec       AgentSpec
	signers    []ssh.Signer
	hostKeys   HostKeyPolicy
	jumpKeys   HostKeyPolicy
	user       string
	port       int
	sudo       *bool
	supervisor Supervisor
	dial       DialFunc
	timeouts   Timeouts
	backoffMin time.Duration
	backoffMax time.Duration
	log        *slog.Logger
	locks      *hostLocks
}

var (
	_ fleet.Agent             = (*Starter)(nil)
	_ fleet.KeyedAgent        = (*Starter)(nil)
	_ fleet.InstanceForgetter = (*Starter)(nil)
)

// WithKey returns a Starter that logs in with key instead of the configured
// signers (a fleet's own key, kept in memory only). Everything else,
// including the one-start-per-host lock, is shared with s. An empty or
// unusable key returns s itself.
func (s *Starter) WithKey(key fleet.PrivateKey) fleet.Agent {
	if key.IsZero() {
		return s
	}
	signer, err := ssh.NewSignerFromSigner(key.Signer())
	if err != nil {
		s.log.Warn("fleet private key unusable for SSH; keeping the configured keys", "err", err)
		return s
	}
	cp := *s
	cp.signers = []ssh.Signer{signer}
	return &cp
}

// Timeouts bound each part of a start. Zero fields take the defaults.
type Timeouts struct {
	Dial          time.Duration // one TCP connect attempt (default 10 s)
	Handshake     time.Duration // one SSH handshake attempt, banner to auth (default 30 s)
	Step          time.Duration // one install step without its own timeout (default 5 min)
	Start         time.Duration // the systemd probe, unit write and start commands (default 60 s)
	HealthRequest time.Duration // one health request (default 9 s, as dstack)
	Health        time.Duration // waiting for the agent to turn healthy after the start (default 10 min)
}

func (t Timeouts) withDefaults() Timeouts {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.Dial, 10*time.Second)
	def(&t.Handshake, 30*time.Second)
	def(&t.Step, 5*time.Minute)
	def(&t.Start, time.Minute)
	def(&t.HealthRequest, 9*time.Second)
	def(&t.Health, 10*time.Minute)
	return t
}

// Option configures a Starter.
type Option func(*Starter)

// WithUser sets the login user, overriding the instance's SSH user
// (default: the instance's SSHEndpoint.User, else "root").
func WithUser(user string) Option { return func(s *Starter) { s.user = user } }

// WithPort sets the SSH port, overriding the instance's (default: the
// instance's SSHEndpoint.Port, else 22).
func WithPort(port int) Option { return func(s *Starter) { s.port = port } }

// WithSudo says whether commands run through `sudo -n` (default: when the
// login user is not root).
func WithSudo(on bool) Option { return func(s *Starter) { s.sudo = &on } }

// Supervisor is what keeps the agent running after the SSH session ends.
type Supervisor string

// Supervisors.
const (
	// SupervisorAuto uses systemd when /run/systemd/system exists on the
	// host, else setsid/nohup (the default).
	SupervisorAuto Supervisor = ""
	// SupervisorSystemd writes /etc/systemd/system/<Name>.service, then runs
	// systemctl daemon-reload, enable and restart.
	SupervisorSystemd Supervisor = "systemd"
	// SupervisorNohup starts the agent with setsid nohup in the background,
	// output appended to LogFile, pid written to PIDFile. It is not
	// restarted if it dies, nor after a reboot.
	SupervisorNohup Supervisor = "nohup"
)

// WithSupervisor chooses how the agent is started detached (default
// SupervisorAuto).
func WithSupervisor(sv Supervisor) Option { return func(s *Starter) { s.supervisor = sv } }

// WithJumpHostKeys sets the host key policy for jump hosts (default: the
// instances' policy, with the identity "jump:<host:port>"; a PinnedKey
// policy therefore needs its own jump policy).
func WithJumpHostKeys(p HostKeyPolicy) Option { return func(s *Starter) { s.jumpKeys = p } }

// WithDial sets how TCP connections are opened (default: a net.Dialer).
func WithDial(d DialFunc) Option { return func(s *Starter) { s.dial = d } }

// WithTimeouts sets the timeouts; zero fields keep their defaults.
func WithTimeouts(t Timeouts) Option { return func(s *Starter) { s.timeouts = t } }

// WithBackoff sets the connect retry delays: the first one, doubled after
// each failure up to max, each jittered by ±20% (default 500 ms, 5 s).
func WithBackoff(first, max time.Duration) Option {
	return func(s *Starter) { s.backoffMin, s.backoffMax = first, max }
}

// WithLogger sets the logger (default slog.Default()). Keys never reach it.
func WithLogger(l *slog.Logger) Option { return func(s *Starter) { s.log = l } }

// New returns a Starter for spec that authenticates with signers (keys in
// memory; nothing is written to disk) and checks host keys with hostKeys.
// It fails when spec is invalid, signers is empty or hostKeys is nil.
func New(spec AgentSpec, signers []ssh.Signer, hostKeys HostKeyPolicy, opts ...Option) (*Starter, error) {
	spec, err := spec.validate()
	if err != nil {
		return nil, err
	}
	if len(signers) == 0 {
		return nil, errors.New("shim: no signers")
	}
	if hostKeys == nil {
		return nil, errors.New("shim: no host key policy (use PinnedKey, TrustOnFirstUse, KnownHosts or, explicitly, InsecureIgnoreHostKey)")
	}
	s := &Starter{spec: spec, signers: signers, hostKeys: hostKeys, locks: &hostLocks{}}
	for _, o := range opts {
		o(s)
	}
	if s.dial == nil {
		var d net.Dialer
		s.dial = d.DialContext
	}
	if s.jumpKeys == nil {
		s.jumpKeys = s.hostKeys
	}
	if s.backoffMin <= 0 {
		s.backoffMin = 500 * time.Millisecond
	}
	if s.backoffMax < s.backoffMin {
		s.backoffMax = max(5*time.Second, s.backoffMin)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.timeouts = s.timeouts.withDefaults()
	return s, nil
}

// Spec returns the agent spec (defaults filled).
func (s *Starter) Spec() AgentSpec { return s.spec }

// Start brings the agent up on inst and verifies it (fleet.Agent): it
// connects (TCP, then the SSH banner, then auth, each retried with backoff
// until ctx ends; a host key refusal is never retried), returns at once if
// the agent is healthy, else runs the install steps, starts the agent
// detached (systemd when /run/systemd/system exists, else setsid/nohup)
// and polls its health through a direct-tcpip forward until healthy,
// Timeouts.Health passes or ctx ends. Errors: *ConnectError (or
// *HostKeyMismatchError inside it), *StepError, *HealthError.
func (s *Starter) Start(ctx context.Context, inst fleet.Instance) error {
	unlock, err := s.locks.lock(ctx, inst.ID)
	if err != nil {
		return err
	}
	defer unlock()
	c, err := s.connect(ctx, inst, true)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.health(ctx); err == nil {
		s.log.Info("shim: agent already healthy", "instance", inst.ID, "agent", s.spec.Name)
		return nil
	}
	if err := s.install(ctx, c); err != nil {
		return err
	}
	v, err := c.waitHealthy(ctx, s.timeouts.Health, s.backoffMin, s.backoffMax)
	if err != nil {
		return err
	}
	s.log.Info("shim: agent started", "instance", inst.ID, "agent", s.spec.Name, "version", v)
	return nil
}

// Check connects to inst once (no retries) and verifies the agent's health
// (fleet.Agent). Errors: *ConnectError, *HealthError.
func (s *Starter) Check(ctx context.Context, inst fleet.Instance) error {
	c, err := s.connect(ctx, inst, false)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.health(ctx)
	return err
}

// Connect opens an authenticated connection to inst (through its jump host
// if it has one), retrying like Start, for callers that talk to the agent
// afterwards over the same forwarded path (Conn.AgentHTTPClient).
func (s *Starter) Connect(ctx context.Context, inst fleet.Instance) (*Conn, error) {
	return s.connect(ctx, inst, true)
}

func (s *Starter) connect(ctx context.Context, inst fleet.Instance, retry bool) (*Conn, error) {
	ep := inst.SSH
	if ep.Host == "" {
		return nil, fmt.Errorf("shim: instance %s has no SSH host", inst.ID)
	}
	conn := &Conn{s: s, instID: inst.ID}
	var via *jumpPath
	if j := ep.Jump; j != nil {
		addr := hostPort(j.Host, j.Port)
		jt := target{id: "jump:" + addr, instID: inst.ID, addr: addr,
			user: firstOf(j.User, s.user), jump: true, dial: s.dial, policy: s.jumpKeys}
		jc, err := s.connectRetry(ctx, jt, retry)
		if err != nil {
			return nil, err
		}
		via = &jumpPath{s: s, t: jt}
		via.set(jc)
	}
	port := ep.Port
	if s.port != 0 {
		port = s.port
	}
	user := firstOf(s.user, ep.User)
	c, err := s.connectRetry(ctx, target{id: HostIdentity(inst), instID: inst.ID, addr: hostPort(ep.Host, port),
		user: user, dial: s.dial, policy: s.hostKeys, via: via}, retry)
	if err != nil {
		if via != nil {
			via.close()
		}
		return nil, err
	}
	if via != nil {
		conn.jump = via.c
	}
	conn.client = c
	conn.sudo = user != "root"
	if s.sudo != nil {
		conn.sudo = *s.sudo
	}
	return conn, nil
}

// firstOf returns the first non-empty string, else "root".
func firstOf(users ...string) string {
	for _, u := range users {
		if u != "" {
			return u
		}
	}
	return "root"
}

// hostLocks serialises Starts per instance id.
type hostLocks struct {
	mu sync.Mutex
	m  map[string]*hostLock
}

type hostLock struct {
	ch   chan struct{} // capacity 1: held when full
	refs int
}

// lock waits for id's lock or ctx's end; unlock releases it.
func (l *hostLocks) lock(ctx context.Context, id string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*hostLock{}
	}
	h := l.m[id]
	if h == nil {
		h = &hostLock{ch: make(chan struct{}, 1)}
		l.m[id] = h
	}
	h.refs++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if h.refs--; h.refs == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
	select {
	case h.ch <- struct{}{}:
		return func() { <-h.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
