package shim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Conn is an authenticated SSH connection to an instance (through its jump
// host when it has one). Close it when done.
type Conn struct {
	s      *Starter
	instID string
	client *ssh.Client
	jump   *ssh.Client // nil without a jump host
	sudo   bool

	once sync.Once
	tr   *http.Transport
	hc   *http.Client
}

// Client returns the SSH client of the instance.
func (c *Conn) Client() *ssh.Client { return c.client }

// Close closes the connection and the jump host's.
func (c *Conn) Close() error {
	if c.tr != nil {
		c.tr.CloseIdleConnections()
	}
	var errs []error
	if c.client != nil {
		errs = append(errs, ignoreClosed(c.client.Close()))
	}
	if c.jump != nil {
		errs = append(errs, ignoreClosed(c.jump.Close()))
	}
	return errors.Join(errs...)
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// AgentAddr is the agent's address as the host sees it ("localhost:10998").
func (c *Conn) AgentAddr() string { return "localhost:" + strconv.Itoa(c.s.spec.HealthPort) }

// AgentHTTPClient returns an *http.Client whose every connection is a
// direct-tcpip forward to the agent's localhost port on the host, whatever
// the URL's host: use "http://localhost:<port>/..." URLs. It is the path
// health is verified through.
func (c *Conn) AgentHTTPClient() *http.Client {
	c.once.Do(func() {
		c.tr = &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return c.client.DialContext(ctx, "tcp", c.AgentAddr())
			},
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     90 * time.Second,
		}
		c.hc = &http.Client{Transport: c.tr}
	})
	return c.hc
}

// healthBody is the part of a health answer that is checked.
type healthBody struct {
	Service string `json:"service"`
	Version string `json:"version"`
}

// health makes one health request through the forward and returns the
// version the agent reported.
func (c *Conn) health(ctx context.Context) (string, error) {
	spec := c.s.spec
	url := "http://" + c.AgentAddr() + spec.HealthPath
	herr := &HealthError{InstanceID: c.instID, URL: url}
	rctx, cancel := context.WithTimeout(ctx, c.s.timeouts.HealthRequest)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		herr.Err = err
		return "", herr
	}
	resp, err := c.AgentHTTPClient().Do(req)
	if err != nil {
		herr.Err = err
		return "", herr
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	herr.StatusCode = resp.StatusCode
	if err != nil {
		herr.Err = err
		return "", herr
	}
	var body healthBody
	jerr := json.Unmarshal(data, &body)
	herr.Service = body.Service
	switch {
	case resp.StatusCode != http.StatusOK:
		return "", herr
	case spec.Service != "" && jerr != nil:
		herr.Err = fmt.Errorf("decoding health answer: %w", jerr)
		return "", herr
	case spec.Service != "" && body.Service != spec.Service:
		herr.Err = fmt.Errorf("want service %q", spec.Service)
		return "", herr
	}
	return body.Version, nil
}

// waitHealthy polls health with backoff until it succeeds, wait passes or
// ctx ends; it then returns the last informative failure, joined with the
// context's error.
func (c *Conn) waitHealthy(ctx context.Context, wait, first, maxDelay time.Duration) (string, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	delay := first
	var last error
	for {
		v, err := c.health(wctx)
		if err == nil {
			return v, nil
		}
		if wctx.Err() == nil || last == nil {
			last = err
		}
		c.s.log.Debug("shim: agent not healthy yet", "instance", c.instID, "delay", delay, "err", err)
		if wctx.Err() != nil || !sleepCtx(wctx, jitter(delay)) {
			var herr *HealthError
			if errors.As(last, &herr) && !errors.Is(last, wctx.Err()) {
				herr.Err = errors.Join(herr.Err, fmt.Errorf("gave up waiting: %w", wctx.Err()))
			}
			return "", last
		}
		delay = min(delay*2, maxDelay)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// run runs cmd in a new session with stdin (nil: none) within timeout.
// A command that runs out of time closes the whole connection (x/crypto
// cannot otherwise unblock a session that the host does not end). It
// returns the exit status (-1 when none) and the error for anything but a
// plain exit.
func (c *Conn) run(ctx context.Context, cmd string, stdin []byte, timeout time.Duration) (stdout, stderr string, exit int, err error) {
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := context.AfterFunc(sctx, func() { c.client.Close() })
	defer stop()
	sess, err := c.client.NewSession()
	if err != nil {
		return "", "", -1, ctxErr(sctx, ctx, timeout, err)
	}
	defer sess.Close()
	out, errOut := &tailBuffer{max: 8 << 10}, &tailBuffer{max: 8 << 10}
	sess.Stdout, sess.Stderr = out, errOut
	if stdin != nil {
		sess.Stdin = bytes.NewReader(stdin)
	}
	err = sess.Run(cmd)
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0, nil
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitStatus(), nil
	case sctx.Err() != nil:
		return out.String(), errOut.String(), -1, ctxErr(sctx, ctx, timeout, err)
	}
	return out.String(), errOut.String(), -1, err
}

// ctxErr explains a failure after sctx (a child of ctx with timeout) ended.
func ctxErr(sctx, ctx context.Context, timeout time.Duration, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	case sctx.Err() != nil:
		return &timeoutError{stage: "command", d: timeout, err: err}
	}
	return err
}
