package shim

import (
	"context"
	"errors"
	"fmt"
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
	via    *jumpPath // the jump host dialled through (dial unused), or nil
}

// connectRetry connects to t, retrying failures of every stage but the host
// key with capped, jittered backoff until ctx ends (or once when retry is
// false). Through a jump host (t.via), an attempt first reopens the jump
// connection when it dropped; a failure of the jump path is reported as the
// jump host's (Jump, its address).
func (s *Starter) connectRetry(ctx context.Context, t target, retry bool) (*ssh.Client, error) {
	delay := s.backoffMin
	for attempt := 1; ; attempt++ {
		c, jt, stage, err := s.attemptVia(ctx, t)
		if err == nil {
			if attempt > 1 {
				s.log.Debug("shim: connected", "instance", t.instID, "addr", t.addr, "jump", t.jump, "attempts", attempt)
			}
			return c, nil
		}
		ce := &ConnectError{InstanceID: t.instID, Addr: jt.addr, Jump: jt.jump, Stage: stage, Attempts: attempt, Err: err}
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

// attemptVia is attempt through t's jump path, if any: it reopens the jump
// connection first when it dropped, and blames the jump path for a failure
// after which the jump connection is found dead. It returns the target the
// failure belongs to (t, or the jump host).
func (s *Starter) attemptVia(ctx context.Context, t target) (*ssh.Client, target, Stage, error) {
	j := t.via
	if j == nil {
		c, stage, err := s.attempt(ctx, t)
		return c, t, stage, err
	}
	jc, stage, err := j.client(ctx)
	if err != nil {
		return nil, j.t, stage, err
	}
	t.dial = jc.DialContext
	c, stage, err := s.attempt(ctx, t)
	var refused *ssh.OpenChannelError // the jump host answered: it is alive
	if err != nil && stage != StageHostKey && !errors.As(err, &refused) && ctx.Err() == nil && !j.alive(ctx, jc) {
		s.log.Debug("shim: jump host connection lost", "instance", t.instID, "jump", j.t.addr, "err", err)
		return nil, j.t, StageDial, fmt.Errorf("connection to the jump host lost: %w", err)
	}
	return c, t, stage, err
}

// jumpPath is the SSH connection to a jump host, reopened (once per
// attempt of the host behind it) when it dropped, e.g. the jump host
// restarted while that host was still booting.
type jumpPath struct {
	s    *Starter
	t    target // the jump host
	c    *ssh.Client
	done chan struct{} // closed when c's connection ended
}

// set makes c the current jump connection.
func (j *jumpPath) set(c *ssh.Client) {
	done := make(chan struct{})
	j.c, j.done = c, done
	go func() {
		_ = c.Wait()
		close(done)
	}()
}

// client returns the live jump connection, reopening it (one attempt) when
// it ended.
func (j *jumpPath) client(ctx context.Context) (*ssh.Client, Stage, error) {
	if j.c != nil {
		select {
		case <-j.done:
			j.c.Close()
			j.c = nil
		default:
			return j.c, "", nil
		}
	}
	c, stage, err := j.s.attempt(ctx, j.t)
	if err != nil {
		return nil, stage, err
	}
	j.s.log.Debug("shim: jump host reconnected", "instance", j.t.instID, "addr", j.t.addr)
	j.set(c)
	return c, "", nil
}

// alive reports whether the jump connection jc still answers: its
// connection has not ended and a keepalive request gets a reply within the
// dial timeout. A dead one is closed, so the next attempt reopens it.
func (j *jumpPath) alive(ctx context.Context, jc *ssh.Client) bool {
	if jc != j.c {
		return false
	}
	select {
	case <-j.done:
		jc.Close()
		return false
	default:
	}
	res := make(chan error, 1)
	go func() {
		_, _, err := jc.SendRequest("keepalive@openssh.com", true, nil)
		res <- err
	}()
	t := time.NewTimer(j.s.timeouts.Dial)
	defer t.Stop()
	select {
	case err := <-res:
		if err == nil {
			return true
		}
	case <-t.C:
	case <-ctx.Done():
		return true // not the jump path's fault
	}
	jc.Close()
	<-j.done
	return false
}

// close closes the current jump connection, if any.
func (j *jumpPath) close() {
	if j.c != nil {
		j.c.Close()
		j.c = nil
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
