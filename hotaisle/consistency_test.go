package hotaisle

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The two clients share one option shape for retries.
var _ func(uint, time.Duration, time.Duration) Option = WithRetry

func TestDefaultUserAgentNamesModuleVersionAndProvider(t *testing.T) {
	assert.Regexp(t, `^gpufleet/(devel|v\S+) \(hotaisle\)$`, DefaultUserAgent)
	c, m := newMock(t)
	m.on("GET", "/teams/", 200, `[]`)
	_, err := c.ListTeams(context.Background())
	require.NoError(t, err)
	assert.Equal(t, DefaultUserAgent, m.last(t).Header.Get("User-Agent"))
}

func TestAPIErrorEndsWithTheRequestID(t *testing.T) {
	c, m := newMock(t, WithRetry(1, 0, 0))
	m.on("GET", "/teams/acme/virtual_machines/vm1/", 404, `"Not Found: Resource not found"`, "X-Request-Id", "req-7")
	_, err := c.GetVM(context.Background(), "vm1")
	assert.EqualError(t, err, "hotaisle: GET /teams/acme/virtual_machines/vm1/: 404: Not Found: Resource not found (request id req-7)")
}

// WithClock drives the client's waits: a Retry-After of an hour is slept on
// the given clock, not on the process clock.
func TestWithClockDrivesRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &stepClock{}
		c, m := newMock(t, WithClock(clock), WithRetry(2, 0, 0))
		m.on("GET", "/teams/", 429, `"Too Many Requests"`, "Retry-After", "3600")
		start := time.Now()
		_, err := c.ListTeams(context.Background())
		assert.ErrorIs(t, err, fleet.ErrRateLimited)
		assert.Equal(t, []time.Duration{time.Hour}, clock.slept)
		assert.Zero(t, time.Since(start))
	})
}

// stepClock records sleeps and returns at once.
type stepClock struct{ slept []time.Duration }

func (c *stepClock) Now() time.Time { return time.Now() }
func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	return ctx.Err()
}

// prefixes are the package prefixes an error string may carry, each once.
var prefixes = []string{"gpufleet: ", "hotaisle: ", "vultr: "}

// noDoubledPrefix fails when an error's text repeats a package prefix
// ("hotaisle: register SSH key: hotaisle: POST ...") or carries the text of
// a fleet error class ("...: gpufleet: invalid request").
func noDoubledPrefix(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	s := err.Error()
	for _, p := range prefixes {
		assert.LessOrEqual(t, strings.Count(s, p), 1, "%q repeats %q", s, p)
	}
	assert.NotContains(t, s, "gpufleet: ", "%q carries a fleet class's text", s)
}

// Every kind of error the client and the provider return, each read once.
func TestNoErrorDoublesItsPrefix(t *testing.T) {
	_, c := newShaped(t, map[string]reply{
		"GET /api/teams/acme/virtual_machines/":  {200, `{}`},
		"POST /api/teams/acme/virtual_machines/": {500, `"Internal Server Error"`},
		"POST /api/user/ssh_keys/":               {403, `"Forbidden: Permission denied"`},
		"GET /api/user/":                         {200, `{"user":{"name":"n","email":"e"},"teams":[]}`},
	})
	ctx := t.Context()
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	add(errOf(c.ListVMs(ctx)))                           // *DecodeError
	add(errOf(c.GetVM(ctx, "missing")))                  // *APIError 404
	add(errOf(c.GetVM(ctx, "..")))                       // local refusal
	add(errOf(c.ProvisionVM(ctx, VMProvisionRequest{}))) // local refusal
	_, _, err := c.AddSSHKey(ctx, "not a key")
	add(err)
	add(errOf(c.Check(ctx, RoleOperator))) // *UnknownTeamError
	p := NewProvider(c)
	add(errOf(p.Create(ctx, fleet.CreateRequest{SSHKeys: []string{testAuthorizedKey(t)}}))) // SSH key refused
	add(errOf(p.Create(ctx, fleet.CreateRequest{Offer: fleet.Offer{InstanceType: "x"}})))   // foreign offer
	add(errOf(p.Create(ctx, fleet.CreateRequest{Offer: fleet.Offer{ProviderData: BareMetalSpecs{}}})))
	down := New(testKey, "acme", WithBaseURL("http://127.0.0.1:1/api"), WithRateLimit(0, 0), WithRetry(1, 0, 0))
	add(errOf(down.ListVMs(ctx))) // *TransportError
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	add(errOf(down.ListVMs(cancelled)))
	for _, err := range errs {
		noDoubledPrefix(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), "hotaisle: "), "%q", err)
	}
	var ue *UnknownTeamError
	assert.True(t, errors.As(errs[5], &ue))
}
