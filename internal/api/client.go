package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// MaxResponseBytes bounds how much of a response body is read (16 MiB).
const MaxResponseBytes = 16 << 20

// AttemptTimeout bounds one attempt (sending, waiting, reading the body:
// 15 minutes, longer than any answer either API was seen to take) when
// neither the caller's context has a deadline nor the HTTP client a
// Timeout: every call has a deadline. A timed-out attempt is a
// *TransportError, retried when the method is idempotent.
const AttemptTimeout = 15 * time.Minute

// Config configures a Client.
type Config struct {
	// Provider names the API in errors ("vultr: GET ...") and logs.
	Provider string
	// BaseURL is prefixed to every request path, e.g. "https://api.vultr.com".
	BaseURL string
	// HTTPClient sends the requests (default: a client with a 60 s timeout).
	// The Client uses a copy that follows no redirect (see noRedirects);
	// HTTPClient itself is not changed.
	HTTPClient *http.Client
	// UserAgent is sent as the User-Agent header.
	UserAgent string
	// Limiter, if set, is waited on before every attempt (shared by all calls).
	Limiter *rate.Limiter
	// Clock is the time of the limiter's waits, Retry-After and retry
	// backoff (default RealClock).
	Clock Clock
	// Retry bounds the retries of idempotent calls.
	Retry RetryPolicy
	// Secrets are the forms of the API key cut out of every error built
	// from an answer (see Secrets).
	Secrets []string
	// KeyProblem, when not "", is why the API key cannot be sent: every
	// call then fails with a *KeyError before sending anything.
	KeyProblem string
	// Authorize sets the auth header on a request. The key lives only in this
	// closure: it never reaches logs or errors.
	Authorize func(h http.Header)
	// ParseError turns a non-2xx answer into the client's typed error; a
	// 3xx answer comes with Response.Redirect set.
	ParseError func(r *Response) error
	// Logger receives one debug line per attempt (method, path, status,
	// attempt, duration); never headers or bodies. Default: discard.
	Logger *slog.Logger
}

// Client sends JSON requests to one API.
type Client struct {
	cfg Config // Secrets nil: the key forms live only in secrets
	// secrets returns Config.Secrets: a closure, so that no formatted form
	// of a Client reaches them.
	secrets func() []string
}

// New returns a Client for cfg, filling in defaults.
func New(cfg Config) *Client {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	}
	cfg.HTTPClient = noRedirects(cfg.HTTPClient)
	if cfg.Clock == nil {
		cfg.Clock = RealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ParseError == nil {
		cfg.ParseError = func(r *Response) error { return fmt.Errorf("HTTP %d", r.Status) }
	}
	if cfg.Provider == "" {
		cfg.Provider = "api"
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	cfg.Retry = cfg.Retry.withDefaults()
	keys := cfg.Secrets
	cfg.Secrets = nil
	return &Client{cfg: cfg, secrets: func() []string { return keys }}
}

// Request is one API call.
type Request struct {
	Method string     // http.MethodGet, ...
	Path   string     // appended to the base URL, starting with "/"
	Query  url.Values // optional query
	Body   any        // JSON-encoded when non-nil
	// OptionalBody lets a 2xx answer come without a body even though out is
	// given (an update that may or may not echo the object).
	OptionalBody bool
}

// Response is an API answer, kept whole for error construction.
type Response struct {
	Status     int
	Header     http.Header
	Body       []byte
	RetryAfter time.Duration // parsed Retry-After header, 0 when absent
	Method     string
	Path       string
	// Redirect describes a 3xx answer (never followed); nil otherwise.
	Redirect *RedirectError
}

// Idempotent reports whether a method is retried on 429 and transient
// failures: GET, HEAD and DELETE. A POST, PUT or PATCH is never retried here,
// since a 5xx can hide a success and a blind retry can duplicate a server.
func Idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
		return true
	}
	return false
}

// errEmptyBody is the cause of a *DecodeError for a 2xx answer with no body
// where one was promised.
var errEmptyBody = errors.New("the answer has no body")

// Do sends req (retrying it when idempotent) and, when out is non-nil,
// decodes the 2xx JSON body into out: an empty body (unless
// req.OptionalBody) or one that does not decode is a *DecodeError. A non-2xx
// answer (3xx included: redirects are never followed) is returned as
// cfg.ParseError's error; a failure to reach the API as a *TransportError; a
// key that cannot be sent as a *KeyError; a cancelled ctx as ctx.Err()
// wrapped.
func (c *Client) Do(ctx context.Context, req Request, out any) (*Response, error) {
	if c.cfg.KeyProblem != "" {
		return nil, &KeyError{Provider: c.cfg.Provider, Method: req.Method,
			Path: RedactString(req.Path, c.secrets()), Reason: c.cfg.KeyProblem}
	}
	var body []byte
	if req.Body != nil {
		b, err := json.Marshal(req.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: encode %s %s: %w", c.cfg.Provider, req.Method, req.Path, err)
		}
		body = b
	}
	var (
		resp *Response
		last error
		sent bool // an attempt reached the HTTP client: the request may have left
	)
	attempt := func() error {
		r, err := c.once(ctx, req, body, &sent)
		resp, last = r, err
		return err
	}
	var err error
	if Idempotent(req.Method) {
		err = c.cfg.Retry.run(ctx, c.cfg.Clock, attempt)
	} else {
		err = attempt()
	}
	if err != nil && ctx.Err() != nil {
		err = c.ctxError(req, ctx.Err(), last)
		var ce *contextError
		if errors.As(err, &ce) {
			ce.notSent = !sent
		}
	}
	if err != nil || out == nil {
		return resp, err
	}
	if len(bytes.TrimSpace(resp.Body)) == 0 {
		if req.OptionalBody {
			return resp, nil
		}
		return resp, c.DecodeError(req.Method, req.Path, errEmptyBody)
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return resp, c.DecodeError(req.Method, req.Path, err)
	}
	return resp, nil
}

// DecodeError returns the *DecodeError of a 2xx answer to method and path
// whose body is not what the endpoint promises (cause says why). A cause
// whose text quotes a secret (a decoder naming the value it could not read)
// is replaced by its redacted text; so is such a path.
func (c *Client) DecodeError(method, path string, cause error) *DecodeError {
	keys := c.secrets()
	return &DecodeError{Provider: c.cfg.Provider, Method: method, Path: RedactString(path, keys),
		Err: RedactError(cause, keys)}
}

// Redact cuts every secret of the Client out of s (see RedactString): for
// the errors a client builds from the values of an answer.
func (c *Client) Redact(s string) string { return RedactString(s, c.secrets()) }

// ctxError names a call that ctx cut short, keeping its last error
// (unless that was the cut itself).
func (c *Client) ctxError(req Request, cerr, last error) error {
	var ce *contextError
	if errors.As(last, &ce) {
		return last
	}
	if errors.Is(last, cerr) {
		last = nil
	}
	return &contextError{provider: c.cfg.Provider, method: req.Method, path: req.Path, err: cerr, last: last}
}

// once makes one attempt; *sent becomes true when the request is handed
// to the HTTP client (from then on it may have reached the API).
func (c *Client) once(ctx context.Context, req Request, body []byte, sent *bool) (*Response, error) {
	if err := c.wait(ctx); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, &contextError{provider: c.cfg.Provider, method: req.Method, path: req.Path,
				during: "rate limiter wait", err: cerr}
		}
		return nil, fmt.Errorf("%s: %s %s: rate limiter: %w", c.cfg.Provider, req.Method, req.Path, err)
	}
	if cerr := ctx.Err(); cerr != nil { // ended before the call, or just as the wait ended: not sent
		return nil, &contextError{provider: c.cfg.Provider, method: req.Method, path: req.Path, err: cerr}
	}
	actx := ctx // the attempt's; ctx stays the caller's, to tell its cancellation from a timeout here
	if _, ok := ctx.Deadline(); !ok && c.cfg.HTTPClient.Timeout <= 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, AttemptTimeout)
		defer cancel()
	}
	hreq, err := c.build(actx, req, body)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	*sent = true
	hresp, err := c.cfg.HTTPClient.Do(hreq)
	if err != nil {
		return nil, c.sendError(ctx, req, err, start)
	}
	defer hresp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(hresp.Body, MaxResponseBytes))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, c.ctxError(req, cerr, nil)
		}
		return nil, c.transportError(req, err)
	}
	c.log(req, hresp.StatusCode, start)
	resp := &Response{Status: hresp.StatusCode, Header: hresp.Header, Body: data,
		RetryAfter: parseRetryAfter(hresp.Header.Get("Retry-After"), c.cfg.Clock.Now()),
		Method:     req.Method, Path: req.Path}
	if IsRedirect(resp.Status) {
		resp.Redirect = c.redirectOf(req, hresp)
	}
	if resp.Status < 200 || resp.Status > 299 {
		resp = c.redactAnswer(resp)
		return resp, c.cfg.ParseError(resp)
	}
	return resp, nil
}

// build makes the HTTP request with its headers.
func (c *Client) build(ctx context.Context, req Request, body []byte) (*http.Request, error) {
	u := c.cfg.BaseURL + req.Path
	if len(req.Query) > 0 {
		u += "?" + req.Query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hreq, err := http.NewRequestWithContext(ctx, req.Method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("%s: build %s %s: %w", c.cfg.Provider, req.Method, req.Path, err)
	}
	hreq.Header.Set("Accept", "application/json")
	if body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.UserAgent != "" {
		hreq.Header.Set("User-Agent", c.cfg.UserAgent)
	}
	if c.cfg.Authorize != nil {
		c.cfg.Authorize(hreq.Header)
	}
	return hreq, nil
}

// sendError classifies a failure of HTTPClient.Do: the caller's ctx, or a
// transport failure.
func (c *Client) sendError(ctx context.Context, req Request, err error, start time.Time) error {
	if cerr := ctx.Err(); cerr != nil {
		return c.ctxError(req, cerr, nil)
	}
	c.log(req, 0, start)
	return c.transportError(req, err)
}

// transportError is the *TransportError of err, its text and the path
// redacted.
func (c *Client) transportError(req Request, err error) *TransportError {
	keys := c.secrets()
	return &TransportError{Provider: c.cfg.Provider, Method: req.Method, Path: RedactString(req.Path, keys),
		Err: RedactError(scrub(err), keys)}
}

// wait takes one token of the limiter, sleeping on the clock until it is due.
func (c *Client) wait(ctx context.Context) error {
	if c.cfg.Limiter == nil {
		return nil
	}
	now := c.cfg.Clock.Now()
	r := c.cfg.Limiter.ReserveN(now, 1)
	if !r.OK() {
		return errors.New("limiter burst is 0")
	}
	d := r.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	if err := c.cfg.Clock.Sleep(ctx, d); err != nil {
		r.CancelAt(c.cfg.Clock.Now())
		return err
	}
	return nil
}

func (c *Client) log(req Request, status int, start time.Time) {
	c.cfg.Logger.Debug("api call", "provider", c.cfg.Provider, "method", req.Method, "path", req.Path,
		"status", status, "duration", time.Since(start))
}

// scrub drops the *url.Error wrapper (which repeats the full URL) and keeps
// the cause; the method and path are carried by TransportError.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
