package hotaisle

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/internal/api"
	"golang.org/x/time/rate"
)

const (
	// DefaultBaseURL is the Hot Aisle API root (swagger host admin.hotaisle.app,
	// basePath /api/). Every path below it ends in "/".
	DefaultBaseURL = "https://admin.hotaisle.app/api"
	// DefaultRateLimit is the default client-side limit in requests per second,
	// shared by all calls of one Client. Hot Aisle documents no limit; 10/s is a
	// conservative guess that never bothers a fleet of a few hundred machines.
	DefaultRateLimit = 10.0
	// DefaultBurst is the default limiter burst.
	DefaultBurst = 10
	// DefaultTimeout bounds one HTTP attempt of the default HTTP client. A VM
	// DELETE blocks until the VM is reset (about 20 s, "will not return until
	// the reset is complete"), and provisioning with user_data_url rebuilds the
	// VM inside the POST, so the limit is generous.
	DefaultTimeout = 2 * time.Minute
)

// DefaultUserAgent is sent unless WithUserAgent is given: "gpufleet/<version>
// (hotaisle)", with this module's version from the binary's build
// information ("devel" when it has none).
var DefaultUserAgent = api.UserAgent("hotaisle")

// Client calls the Hot Aisle API for one team with one API key. It is safe
// for concurrent use; all its calls share one rate limiter.
type Client struct {
	api     *api.Client
	team    string
	baseURL string
	clock   Clock
}

// RetryPolicy bounds the retries of GET and DELETE calls: on 429 (honouring
// Retry-After) and on 502, 503, 504 or a transport failure, with exponential
// backoff from MinDelay capped at MaxDelay and jitter, all inside the call's
// context and on the client's Clock. Zero fields take the defaults: 5
// attempts, 500 ms, 30 s.
type RetryPolicy struct {
	// Attempts is the total number of attempts; 1 disables retries.
	Attempts uint
	// MinDelay is the first backoff.
	MinDelay time.Duration
	// MaxDelay caps one backoff (a longer Retry-After is still honoured).
	MaxDelay time.Duration
}

// Clock is the client's source of time, with the method set of fleet.Clock
// (and of the simulator's clock): Now() time.Time, and Sleep(ctx, d) error,
// which waits for d or until ctx ends, returning ctx.Err(). The rate
// limiter's waits, Retry-After, the retry backoff and the pauses between
// label writes are read and slept on it. Default: the process clock.
type Clock = api.Clock

type options struct {
	baseURL   string
	http      *http.Client
	userAgent string
	rps       float64
	burst     int
	retry     RetryPolicy
	logger    *slog.Logger
	clock     Clock
}

// Option configures a Client.
type Option func(*options)

// WithBaseURL sets the API root (default DefaultBaseURL), e.g. a test
// server's URL followed by "/api". A trailing "/" is ignored.
func WithBaseURL(u string) Option { return func(o *options) { o.baseURL = u } }

// WithHTTPClient sets the HTTP client (default: one with a DefaultTimeout
// timeout). Give it a timeout of at least a minute: VM DELETE blocks ~20 s.
// Its redirect policy is not used (no redirect is followed). Without a
// Timeout on it and a deadline on the call's context, each attempt is
// bounded to 15 minutes.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.http = c } }

// WithUserAgent sets the User-Agent header (default DefaultUserAgent).
func WithUserAgent(ua string) Option { return func(o *options) { o.userAgent = ua } }

// WithRateLimit sets the client-side limit shared by all calls of the Client,
// in requests per second with the given burst (default DefaultRateLimit,
// DefaultBurst). rps <= 0 disables the limiter; a burst below 1 is 1.
func WithRateLimit(rps float64, burst int) Option {
	return func(o *options) { o.rps, o.burst = rps, burst }
}

// WithRetryPolicy sets the retry policy of GET and DELETE calls.
func WithRetryPolicy(p RetryPolicy) Option { return func(o *options) { o.retry = p } }

// WithRetry bounds the retries of GET and DELETE: attempts in total (1
// disables retries), backoff from minDelay doubling up to maxDelay, jittered;
// zero values keep the defaults (5, 500 ms, 30 s). A longer Retry-After is
// still honoured; the call's ctx bounds everything.
func WithRetry(attempts uint, minDelay, maxDelay time.Duration) Option {
	return func(o *options) { o.retry = RetryPolicy{Attempts: attempts, MinDelay: minDelay, MaxDelay: maxDelay} }
}

// WithClock sets the clock of the rate limiter's waits, Retry-After, the
// retry backoff and the pauses between label writes (default: the process
// clock). Give it the clock that drives the fleet Manager and the simulator
// (sim.ScaledClock), or the client's waits run on the wall clock while the
// clouds run faster. nil keeps the default.
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

// WithLogger sets the logger, which receives one debug line per attempt
// (method, path, status, duration) and never headers, bodies or the key.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// New returns a Client that authenticates with apiKey ("Authorization: Token
// <key>", as the swagger securityDefinitions say) and works on the team with
// handle team. Surrounding white space and a "Token " prefix are dropped
// from apiKey. A key that is then empty (every call of the API needs one)
// or holds a control character (a line break inside it) makes every call
// fail before sending with a *KeyError (fleet.ErrUnauthorized,
// fleet.ErrNotSent). It makes no call; use Check to validate the key and
// team.
func New(apiKey, team string, opts ...Option) *Client {
	apiKey = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(apiKey), "Token "))
	keyProblem := api.CheckKey(apiKey)
	if apiKey == "" {
		keyProblem = "the API key is empty"
	}
	o := options{baseURL: DefaultBaseURL, userAgent: DefaultUserAgent,
		rps: DefaultRateLimit, burst: DefaultBurst}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.http == nil {
		o.http = defaultHTTPClient()
	}
	if o.clock == nil {
		o.clock = api.RealClock()
	}
	var lim *rate.Limiter
	if o.rps > 0 && !math.IsInf(o.rps, 1) {
		lim = rate.NewLimiter(rate.Limit(o.rps), max(o.burst, 1))
	}
	base := strings.TrimRight(o.baseURL, "/")
	auth := "Token " + apiKey
	return &Client{team: team, baseURL: base, clock: o.clock, api: api.New(api.Config{
		Provider:   "hotaisle",
		BaseURL:    base,
		HTTPClient: o.http,
		UserAgent:  o.userAgent,
		Limiter:    lim,
		Retry:      api.RetryPolicy(o.retry),
		Clock:      o.clock,
		Secrets:    hotaisleSecrets(apiKey),
		KeyProblem: keyProblem,
		Authorize:  func(h http.Header) { h.Set("Authorization", auth) },
		ParseError: func(r *api.Response) error { return parseError(r, apiKey) },
		Logger:     o.logger,
	})}
}

// defaultHTTPClient allows DefaultTimeout per attempt (VM DELETE blocks ~20 s).
func defaultHTTPClient() *http.Client { return &http.Client{Timeout: DefaultTimeout} }

// Team returns the team handle the Client works on.
func (c *Client) Team() string { return c.team }

// String describes the Client without its key.
func (c *Client) String() string {
	return fmt.Sprintf("hotaisle.Client{team: %q, baseURL: %q, key: [redacted]}", c.team, c.baseURL)
}

// GoString is String, so %#v does not print the key either.
func (c *Client) GoString() string { return c.String() }

// Format prints String for every verb (%v, %+v, %#v, %s, %q).
func (c *Client) Format(f fmt.State, verb rune) {
	if c == nil {
		fmt.Fprint(f, "<nil>")
		return
	}
	fmt.Fprint(f, c.String())
}

// do sends one request.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	_, err := c.api.Do(ctx, api.Request{Method: method, Path: path, Query: q, Body: body}, out)
	return err
}

// teamPath returns "/teams/{team}/" followed by segs (already escaped) and a
// trailing "/". An empty team is refused before any call.
func (c *Client) teamPath(segs ...string) (string, error) {
	t, err := nameSeg("team", c.team)
	if err != nil {
		return "", err
	}
	return "/teams/" + t + "/" + strings.Join(append(segs, ""), "/"), nil
}

// itemPath returns the path of one named resource of a team collection
// ("virtual_machines", "bare_metal"), with optional action segments.
func (c *Client) itemPath(kind, collection, name string, extra ...string) (string, error) {
	n, err := nameSeg(kind, name)
	if err != nil {
		return "", err
	}
	return c.teamPath(append([]string{collection, n}, extra...)...)
}

// nameSeg validates and escapes a name for one path segment. An empty name,
// "." or ".." would address a different resource (a DELETE of
// ".../virtual_machines/../" could reach the team), so they are refused before
// any call with an error answering fleet.ErrInvalidRequest.
func nameSeg(kind, name string) (string, error) {
	if name == "" || name == "." || name == ".." {
		return "", invalid("%s name %q", kind, name)
	}
	return url.PathEscape(name), nil
}

// forceQuery returns ?force=true when force is set.
func forceQuery(force bool) url.Values {
	if !force {
		return nil
	}
	return url.Values{"force": {"true"}}
}
