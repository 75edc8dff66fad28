package vultr

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The two clients share one option shape for retries.
var _ func(uint, time.Duration, time.Duration) Option = WithRetry

func TestDefaultUserAgentNamesModuleVersionAndProvider(t *testing.T) {
	assert.Regexp(t, `^gpufleet/(devel|v\S+) \(vultr\)$`, DefaultUserAgent)
}

// WithClock drives the client's waits: a Retry-After of an hour and the
// limiter's pacing are slept on the given clock, not on the process clock.
func TestWithClockDrivesRetryAfterAndLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &stepClock{}
		c, mt := mockClient(t, WithClock(clock), WithRetry(2, 0, 0), WithRateLimit(1, 1))
		mt.RegisterResponder("GET", testBase+"/v2/vpcs/v1", func(*http.Request) (*http.Response, error) {
			r := httpmock.NewStringResponse(429, `{"error":"Rate limit reached","status":429}`)
			r.Header.Set("Retry-After", "3600")
			return r, nil
		})
		record(t, mt, "GET", "/v2/vpcs/v2", 200, `{"vpc":{"id":"v2"}}`)
		start := time.Now()
		_, err := c.GetVPC(t.Context(), "v1")
		assert.ErrorIs(t, err, fleet.ErrRateLimited)
		assert.Equal(t, []time.Duration{time.Hour}, clock.slept, "Retry-After; the limiter had refilled by then")
		clock.slept = nil
		for range 3 {
			_, err := c.GetVPC(t.Context(), "v2")
			require.NoError(t, err)
		}
		assert.Equal(t, []time.Duration{time.Second, time.Second, time.Second}, clock.slept, "1 request/s")
		assert.Zero(t, time.Since(start), "no process time passed")
	})
}

// stepClock records sleeps, advances by them, and returns at once.
type stepClock struct {
	slept []time.Duration
	now   time.Duration
}

func (c *stepClock) Now() time.Time { return time.Unix(0, 0).Add(c.now) }
func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	c.now += d
	return ctx.Err()
}

// noDoubledPrefix fails when an error's text repeats a package prefix or
// carries the text of a fleet error class ("...: gpufleet: invalid request").
func noDoubledPrefix(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	s := err.Error()
	for _, p := range []string{"gpufleet: ", "hotaisle: ", "vultr: "} {
		assert.LessOrEqual(t, strings.Count(s, p), 1, "%q repeats %q", s, p)
	}
	assert.NotContains(t, s, "gpufleet: ", "%q carries a fleet class's text", s)
	assert.True(t, strings.HasPrefix(s, "vultr: "), "%q", s)
}

// Every kind of error the client and the provider return, each read once.
func TestNoErrorDoublesItsPrefix(t *testing.T) {
	_, c := newShaped(t, map[string]reply{
		"GET /v2/instances":  {200, `{}`, nil},
		"GET /v2/plans":      {200, `{"plans":[{"id":"a"}],"meta":{"total":1,"links":{"next":"c1"}}}`, nil},
		"GET /v2/vpcs/v1":    {200, `{"vpc":{"id":"v1","date_created":"yesterday"}}`, nil},
		"POST /v2/instances": {500, `{"error":"Unable to create server","status":500}`, nil},
	})
	ctx := t.Context()
	var errs []error
	add := func(_ any, err error) { errs = append(errs, err) }
	add(Collect(c.ListInstances(ctx, nil)))                                        // *DecodeError
	add(Collect(c.ListPlans(ctx, nil)))                                            // repeated cursor
	add(c.GetVPC(ctx, "v1"))                                                       // bad date inside a *DecodeError
	add(c.GetInstance(ctx, "missing"))                                             // *APIError 404
	add(c.GetInstance(ctx, ""))                                                    // local refusal
	add(Collect(c.ListInstances(ctx, &InstanceListOptions{Tag: "a", Label: "b"}))) // two filters
	add(c.CreateInstance(ctx, &InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb", OSID: 1}))
	p := NewProvider(c)
	add(p.Create(ctx, fleet.CreateRequest{SSHKeys: []string{"not a key"}}))
	down := New(testKey, WithBaseURL("http://127.0.0.1:1"), WithRateLimit(0, 0), WithRetry(1, 0, 0))
	add(down.GetInstance(ctx, "i")) // *TransportError
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	add(down.GetInstance(cancelled, "i"))
	for _, err := range errs {
		noDoubledPrefix(t, err)
	}
	assert.ErrorIs(t, errs[1], ErrRepeatedCursor)
	assert.ErrorIs(t, errs[1], ErrEndlessList)
}
