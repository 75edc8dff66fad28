package vultr

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/internal/api"
	"golang.org/x/time/rate"
)

// DefaultBaseURL is the Vultr API origin; every path starts with /v2/.
const DefaultBaseURL = "https://api.vultr.com"

// DefaultUserAgent is sent as User-Agent unless WithUserAgent is given:
// "gpufleet/<version> (vultr)", with this module's version from the
// binary's build information ("devel" when it has none).
var DefaultUserAgent = api.UserAgent("vultr")

// DefaultRateLimit is the client-side request rate (requests per second):
// Vultr answers 429 above 30 requests/s.
const DefaultRateLimit = 30

// DefaultPerPage is the page size of every list (the API maximum, 500): a
// fleet's whole inventory usually fits in one request, which matters under a
// 30 requests/s limit. WithPerPage changes it.
const DefaultPerPage = 500

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
// limiter's waits, Retry-After and the retry backoff are read and slept on
// it. Default: the process clock.
type Clock = api.Clock

// Client calls the Vultr API v2. It is safe for concurrent use; all its calls
// share one rate limiter. Its formatted forms (%v, %+v, %#v, String) never
// include the API key.
type Client struct {
	api     *api.Client
	baseURL string
	perPage int
}

type settings struct {
	baseURL    string
	httpClient *http.Client
	userAgent  string
	rps        float64
	burst      int
	retry      RetryPolicy
	logger     *slog.Logger
	perPage    int
	clock      Clock
}

// Option configures a Client.
type Option func(*settings)

// WithBaseURL sets the API origin (default DefaultBaseURL), e.g. an
// httptest.Server URL. Paths "/v2/..." are appended to it; a URL that
// already ends in "/v2" (as govultr's base URL and gpufleet-sim's printed
// GPUFLEET_SIM_VULTR_URL do) or "/" is taken without it.
func WithBaseURL(u string) Option {
	return func(s *settings) {
		u = strings.TrimRight(u, "/")
		s.baseURL = strings.TrimSuffix(u, "/v2")
	}
}

// WithHTTPClient sets the HTTP client (default: 60 s timeout), e.g. the
// in-memory client of sim.Vultr.Client(). Its redirect policy is not used
// (no redirect is followed). Without a Timeout on it and a deadline on the
// call's context, each attempt is bounded to 15 minutes.
func WithHTTPClient(c *http.Client) Option { return func(s *settings) { s.httpClient = c } }

// WithUserAgent sets the User-Agent header (default DefaultUserAgent).
func WithUserAgent(ua string) Option { return func(s *settings) { s.userAgent = ua } }

// WithRateLimit sets the client-side token bucket: rps requests per second
// with bursts of up to burst requests (default 30/s, burst 1, so that no
// one-second window sees much more than 30 calls). rps <= 0 disables it.
func WithRateLimit(rps float64, burst int) Option {
	return func(s *settings) { s.rps, s.burst = rps, burst }
}

// WithRetry bounds the retries of GET and DELETE: attempts in total (1
// disables retries), backoff from minDelay doubling up to maxDelay, jittered.
// A longer Retry-After is still honoured; the call's ctx bounds everything.
func WithRetry(attempts uint, minDelay, maxDelay time.Duration) Option {
	return func(s *settings) { s.retry = RetryPolicy{Attempts: attempts, MinDelay: minDelay, MaxDelay: maxDelay} }
}

// WithRetryPolicy sets the whole retry policy of GET and DELETE calls.
func WithRetryPolicy(p RetryPolicy) Option { return func(s *settings) { s.retry = p } }

// WithClock sets the clock of the rate limiter's waits, Retry-After and the
// retry backoff (default: the process clock). Give it the clock that drives
// the fleet Manager and the simulator (sim.ScaledClock), or the client's
// waits run on the wall clock while the clouds run faster. nil keeps the
// default.
func WithClock(c Clock) Option { return func(s *settings) { s.clock = c } }

// WithLogger sets the logger; it receives one debug line per HTTP attempt
// (method, path, status, duration), never headers or bodies. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithPerPage sets the page size of lists (1..500; default DefaultPerPage).
// Values outside that range are clamped.
func WithPerPage(n int) Option { return func(s *settings) { s.perPage = min(max(n, 1), 500) } }

// New returns a Client that authenticates with apiKey (sent as
// "Authorization: Bearer <apiKey>"; an empty key sends no header, enough for
// the public plan and region lists). Surrounding white space (the line
// break of a key read from a file) and a "Bearer " prefix are dropped from
// apiKey. A key that still holds a control character makes every call fail
// before sending with a *KeyError (fleet.ErrUnauthorized, fleet.ErrNotSent).
// It makes no call.
func New(apiKey string, opts ...Option) *Client {
	apiKey = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(apiKey), "Bearer "))
	s := settings{baseURL: DefaultBaseURL, userAgent: DefaultUserAgent,
		rps: DefaultRateLimit, burst: 1, perPage: DefaultPerPage}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	var lim *rate.Limiter
	if s.rps > 0 {
		lim = rate.NewLimiter(rate.Limit(s.rps), max(s.burst, 1))
	}
	return &Client{
		baseURL: s.baseURL,
		perPage: s.perPage,
		api: api.New(api.Config{
			Provider:   "vultr",
			BaseURL:    s.baseURL,
			HTTPClient: s.httpClient,
			UserAgent:  s.userAgent,
			Limiter:    lim,
			Retry:      api.RetryPolicy(s.retry),
			Clock:      s.clock,
			Secrets:    api.Secrets(apiKey),
			KeyProblem: api.CheckKey(apiKey),
			Authorize:  bearer(apiKey),
			ParseError: func(r *api.Response) error { return parseError(r, apiKey) },
			Logger:     s.logger,
		}),
	}
}

// bearer keeps the key in a closure: no struct field holds it.
func bearer(key string) func(http.Header) {
	if key == "" {
		return nil
	}
	v := "Bearer " + key
	return func(h http.Header) { h.Set("Authorization", v) }
}

// String describes the client without its key.
func (c *Client) String() string { return "vultr.Client{" + c.baseURL + "}" }

// GoString is String: %#v must not dump the fields.
func (c *Client) GoString() string { return c.String() }

// Format prints String for every verb, so no verb can reach the fields.
func (c *Client) Format(f fmt.State, _ rune) { _, _ = fmt.Fprint(f, c.String()) }

// do sends one request and decodes the answer into out (when non-nil).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	_, err := c.api.Do(ctx, api.Request{Method: method, Path: path, Query: q, Body: body}, out)
	return err
}

// pathEscape escapes an id for use as one path segment.
func pathEscape(id string) string { return url.PathEscape(id) }
