package api

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// fakeClock moves only when slept on: a sleep of d advances it by d at once.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept = append(c.slept, d)
	return nil
}

func (c *fakeClock) total() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t time.Duration
	for _, d := range c.slept {
		t += d
	}
	return t
}

func clockClient(rt http.RoundTripper, lim *rate.Limiter, clock Clock) *Client {
	return New(Config{Provider: "test", BaseURL: "https://api.example.test", HTTPClient: &http.Client{Transport: rt},
		Limiter: lim, Clock: clock, Retry: RetryPolicy{Attempts: 5, MinDelay: time.Second, MaxDelay: 4 * time.Second},
		ParseError: func(r *Response) error { return &testErr{status: r.Status, after: r.RetryAfter} }})
}

// The limiter's waits, Retry-After and backoff run on the given clock: the
// process clock (the bubble's) does not move at all.
func TestClockDrivesLimiterRetryAfterAndBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := newFakeClock()
		var calls atomic.Int32
		c := clockClient(rtFunc(func(r *http.Request) (*http.Response, error) {
			switch calls.Add(1) {
			case 1:
				return answer(429, `{}`, "Retry-After", "7"), nil
			case 2:
				return answer(429, `{}`, "Retry-After", clock.Now().Add(90*time.Second).Format(http.TimeFormat)), nil
			case 3:
				return answer(503, `{}`), nil
			}
			return answer(204, ``), nil
		}), rate.NewLimiter(10, 1), clock)
		start := time.Now()
		_, err := c.Do(t.Context(), Request{Method: "GET", Path: "/x"}, nil)
		require.NoError(t, err)
		assert.Zero(t, time.Since(start), "no wall (bubble) time passed")
		require.Len(t, clock.slept, 3, "two Retry-After waits and one backoff; the limiter had tokens")
		assert.Equal(t, 7*time.Second, clock.slept[0])
		assert.Equal(t, 90*time.Second, clock.slept[1], "an HTTP-date Retry-After is read against the clock")
		assert.GreaterOrEqual(t, clock.slept[2], 2*time.Second, "third retry: backoff from 1 s doubled twice, jittered")

		clock.slept = nil
		c = clockClient(rtFunc(func(r *http.Request) (*http.Response, error) { return answer(204, ``), nil }),
			rate.NewLimiter(10, 1), clock)
		for range 21 {
			_, err := c.Do(t.Context(), Request{Method: "GET", Path: "/x"}, nil)
			require.NoError(t, err)
		}
		assert.Equal(t, 2*time.Second, clock.total(), "21 calls at 10/s wait 2 s of clock time")
		assert.Zero(t, time.Since(start))
	})
}

// A limiter wait cut by ctx gives its token back.
func TestLimiterWaitCancelledByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clockClient(rtFunc(func(r *http.Request) (*http.Response, error) { return answer(204, ``), nil }),
			rate.NewLimiter(1, 1), RealClock())
		_, err := c.Do(t.Context(), Request{Method: "GET", Path: "/x"}, nil)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err = c.Do(ctx, Request{Method: "GET", Path: "/x"}, nil)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), "test: GET /x: rate limiter")
	})
}
