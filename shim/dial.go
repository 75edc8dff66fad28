package shim

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// DialFunc opens a TCP connection, like (*net.Dialer).DialContext; tests
// pass the sim Network's Dial.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// target is one SSH host to connect to.
type target struct {
	id     string // host identity for the host key policy
	instID string // the instance the start is for (errors)
	addr   string // "host:port"
	user   string
	jump   bool
	dial   DialFunc
	policy HostKeyPolicy
}

// connectRetry connects to t, retrying failures of every stage but the host
// key with capped, jittered backoff until ctx ends (or once when retry is
// false).
func (s *Starter) connectRetry(ctx context.Context, t target, retry bool) (*ssh.Client, error) {
	delay := s.backoffMin
	for attempt := 1; ; attempt++ {
		c, stage, err := s.attempt(ctx, t)
		if err == nil {
			if attempt > 1 {
				s.log.Debug("shim: connected", "instance", t.instID, "addr", t.addr, "jump", t.jump, "attempts", attempt)
			}
			return c, nil
		}
		ce := &ConnectError{InstanceID: t.instID, Addr: t.addr, Jump: t.jump, Stage: stage, Attempts: attempt, Err: err}
		if ctx.Err() != nil {
			ce.Ctx = ctx.Err()
			return nil, ce
		}
		if stage == StageHostKey || !retry {
			return nil, ce
		}
		s.log.Debug("shim: connect failed, retrying", "instance", t.instID, "addr", t.addr, "jump", t.jump,
			"stage", string(stage), "attempt", attempt, "delay", delay, "err", err)
		if !sleepCtx(ctx, jitter(delay)) {
			ce.Ctx = ctx.Err()
			return nil, ce
		}
		delay = min(delay*2, s.backoffMax)
	}
}

// jitter spreads d by ±20%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	spread := int64(d) / 5
	return d - time.Duration(spread) + time.Duration(rand.Int64N(2*spread+1))
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// attempt dials t once and runs the SSH handshake; on failure it returns
// the stage that failed.
func (s *Starter) attempt(ctx context.Context, t target) (*ssh.Client, Stage, error) {
	v, err := t.policy.Verifier(t.id, t.addr)
	if err != nil {
		return nil, StageHostKey, err
	}
	dctx, cancel := context.WithTimeout(ctx, s.timeouts.Dial)
	conn, err := t.dial(dctx, "tcp", t.addr)
	cancel()
	if err != nil {
		return nil, StageDial, err
	}
	return s.handshake(ctx, conn, t, v)
}

// progressConn records whether the server sent any byte (its banner).
type progressConn struct {
	net.Conn
	got atomic.Bool
}

func (c *progressConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.got.Store(true)
	}
	return n, err
}

// keyOutcome is what the host key callback decided.
type keyOutcome struct {
	mu       sync.Mutex
	accepted bool
	err      error
}

func (k *keyOutcome) set(err error) {
	k.mu.Lock()
	k.accepted, k.err = err == nil, err
	k.mu.Unlock()
}

func (k *keyOutcome) get() (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.accepted, k.err
}

// handshake runs the SSH handshake on conn, cut when ctx ends or the
// handshake timeout passes: x/crypto/ssh has no context, so the conn gets a
// deadline and is closed on ctx.Done.
func (s *Starter) handshake(ctx context.Context, conn net.Conn, t target, v HostKeyVerifier) (*ssh.Client, Stage, error) {
	hctx, cancel := context.WithTimeout(ctx, s.timeouts.Handshake)
	defer cancel()
	pc := &progressConn{Conn: conn}
	stop := context.AfterFunc(hctx, func() { conn.Close() })
	if dl, ok := hctx.Deadline(); ok {
		_ = conn.SetDeadline(dl) // best effort: a direct-tcpip channel has no deadlines
	}
	var key keyOutcome
	cfg := &ssh.ClientConfig{
		User: t.user,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(s.signers...)},
		HostKeyCallback: func(host string, remote net.Addr, k ssh.PublicKey) error {
			err := v.Callback(host, remote, k)
			key.set(err)
			return err
		},
		HostKeyAlgorithms: v.Algorithms,
		ClientVersion:     "SSH-2.0-gpufleet-shim",
	}
	c, chans, reqs, err := ssh.NewClientConn(pc, t.addr, cfg)
	if !stop() && err == nil { // cut just as it succeeded
		c.Close()
		err = hctx.Err()
	}
	if err != nil {
		conn.Close()
		if hctx.Err() != nil && ctx.Err() == nil {
			err = &timeoutError{stage: "handshake", d: s.timeouts.Handshake, err: err}
		}
		accepted, kerr := key.get()
		switch {
		case kerr != nil:
			return nil, StageHostKey, kerr
		case accepted:
			return nil, StageAuth, err
		case !pc.got.Load():
			return nil, StageBanner, err
		}
		return nil, StageHandshake, err
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), "", nil
}

// timeoutError is a per-attempt timeout (the ctx is still alive).
type timeoutError struct {
	stage string
	d     time.Duration
	err   error
}

func (e *timeoutError) Error() string {
	msg := e.stage + " timed out after " + e.d.String()
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

func (e *timeoutError) Unwrap() error { return e.err }

// Timeout reports true (net.Error style).
func (e *timeoutError) Timeout() bool { return true }

// hostPort joins host and port (default 22).
func hostPort(host string, port int) string {
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
