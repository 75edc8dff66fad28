package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func answer(status int, body string, hdr ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

type testErr struct {
	status   int
	after    time.Duration
	redirect *RedirectError
}

func (e *testErr) Error() string                     { return fmt.Sprintf("status %d", e.status) }
func (e *testErr) HTTPStatus() int                   { return e.status }
func (e *testErr) RetryAfterDuration() time.Duration { return e.after }

func newTestClient(rt http.RoundTripper, lim *rate.Limiter) *Client {
	return New(Config{
		BaseURL:    "https://api.example.test/",
		HTTPClient: &http.Client{Transport: rt},
		Limiter:    lim,
		Authorize:  func(h http.Header) { h.Set("Authorization", "Bearer secret-key") },
		ParseError: func(r *Response) error { return &testErr{status: r.Status, after: r.RetryAfter} },
	})
}

func TestDoRetriesIdempotentOn429HonouringRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		var gaps []time.Duration
		last := time.Now()
		c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) {
			gaps = append(gaps, time.Since(last))
			last = time.Now()
			assert.Equal(t, "Bearer secret-key", r.Header.Get("Authorization"))
			assert.Equal(t, "https://api.example.test/v2/x?a=1", r.URL.String())
			if calls.Add(1) < 3 {
				return answer(429, `{}`, "Retry-After", "7"), nil
			}
			return answer(200, `{"n":42}`), nil
		}), nil)
		var out struct{ N int }
		_, err := c.Do(t.Context(), Request{Method: "GET", Path: "/v2/x", Query: map[string][]string{"a": {"1"}}}, &out)
		require.NoError(t, err)
		assert.Equal(t, 42, out.N)
		assert.EqualValues(t, 3, calls.Load())
		assert.Equal(t, 7*time.Second, gaps[1])
		assert.Equal(t, 7*time.Second, gaps[2])
	})
}

func TestDoNeverRetriesPOST(t *testing.T) {
	var calls atomic.Int32
	c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		b, _ := io.ReadAll(r.Body)
		assert.JSONEq(t, `{"plan":"p"}`, string(b))
		return answer(503, `{}`), nil
	}), nil)
	_, err := c.Do(context.Background(), Request{Method: "POST", Path: "/v2/instances", Body: map[string]string{"plan": "p"}}, nil)
	var te *testErr
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 503, te.status)
	assert.EqualValues(t, 1, calls.Load())
}

func TestDoRetriesTransportErrorsThenGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return nil, syscall.ECONNRESET
		}), nil)
		_, err := c.Do(t.Context(), Request{Method: "DELETE", Path: "/v2/instances/1"}, nil)
		require.Error(t, err)
		assert.ErrorIs(t, err, fleet.ErrUnavailable)
		assert.ErrorIs(t, err, syscall.ECONNRESET)
		assert.EqualValues(t, 5, calls.Load())
		assert.NotContains(t, err.Error(), "secret-key")
	})
}

func TestDoDoesNotRetryDomain500OrClientErrors(t *testing.T) {
	for _, status := range []int{400, 404, 500} {
		var calls atomic.Int32
		c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return answer(status, `{}`), nil
		}), nil)
		_, err := c.Do(context.Background(), Request{Method: "DELETE", Path: "/x"}, nil)
		require.Error(t, err)
		assert.EqualValues(t, 1, calls.Load(), "status %d", status)
	}
}

func TestDoStopsRetryingWhenContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) {
			return answer(503, `{}`, "Retry-After", "3600"), nil
		}), nil)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		start := time.Now()
		_, err := c.Do(ctx, Request{Method: "GET", Path: "/x"}, nil)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var te *testErr
		assert.ErrorAs(t, err, &te, "the last API error stays visible")
		assert.Equal(t, time.Minute, time.Since(start))
	})
}

func TestDoWaitsOnTheSharedLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) {
			return answer(204, ``), nil
		}), rate.NewLimiter(10, 1))
		start := time.Now()
		for range 21 {
			_, err := c.Do(t.Context(), Request{Method: "GET", Path: "/x"}, nil)
			require.NoError(t, err)
		}
		assert.Equal(t, 2*time.Second, time.Since(start))
	})
}

func TestDoReportsMalformedJSON(t *testing.T) {
	c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) {
		return answer(200, `{"n":`), nil
	}), nil)
	var out struct{ N int }
	_, err := c.Do(context.Background(), Request{Method: "GET", Path: "/x"}, &out)
	var de *DecodeError
	require.True(t, errors.As(err, &de))
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, 2*time.Second, parseRetryAfter("2", now))
	assert.Equal(t, 90*time.Second, parseRetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now))
	assert.Zero(t, parseRetryAfter("soon", now))
	assert.Zero(t, parseRetryAfter("", now))
}

func TestCheckKey(t *testing.T) {
	assert.Empty(t, CheckKey(""))
	assert.Empty(t, CheckKey("abc.DEF-123_~+/= é"))
	for _, k := range []string{"a\nb", "a\rb", "\x00", "a\tb", "a\x7f", "\x1b"} {
		assert.Contains(t, CheckKey(k), "control character", "%q", k)
	}
	assert.NotContains(t, CheckKey("secret\nkey"), "secret")
}

// A key problem fails every call before anything is sent, as a *KeyError
// of classes fleet.ErrUnauthorized and fleet.ErrNotSent, never retried.
func TestKeyProblemRefusesEveryCall(t *testing.T) {
	var calls atomic.Int32
	rt := rtFunc(func(*http.Request) (*http.Response, error) { calls.Add(1); return nil, errors.New("sent") })
	c := New(Config{Provider: "test", BaseURL: "https://api.example.test", HTTPClient: &http.Client{Transport: rt},
		KeyProblem: "the API key is empty"})
	for _, m := range []string{"GET", "DELETE", "POST"} {
		_, err := c.Do(context.Background(), Request{Method: m, Path: "/x"}, nil)
		var ke *KeyError
		require.ErrorAs(t, err, &ke)
		assert.Equal(t, "test: "+m+" /x: the API key is empty (request not sent)", err.Error())
		assert.True(t, errors.Is(err, fleet.ErrUnauthorized))
		assert.True(t, errors.Is(err, fleet.ErrNotSent))
		assert.False(t, Transient(err))
	}
	assert.Zero(t, calls.Load())
}

// A caller whose context has no deadline, with an HTTP client without a
// Timeout, still gets an answer: each attempt is bounded by AttemptTimeout
// (a transport error, retried for a GET), never a wait without end.
func TestAttemptWithoutAnyDeadlineIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			<-r.Context().Done() // the server never answers
			return nil, r.Context().Err()
		}), nil)
		start := time.Now()
		_, err := c.Do(context.Background(), Request{Method: http.MethodGet, Path: "/v2/instances"}, nil)
		var te *TransportError
		require.ErrorAs(t, err, &te, "a timeout of the attempt, not the caller's cancellation: %v", err)
		assert.Equal(t, int32(c.cfg.Retry.Attempts), calls.Load(), "a GET is retried")
		assert.LessOrEqual(t, time.Since(start), time.Duration(calls.Load())*(AttemptTimeout+time.Minute))
	})
}

// A call whose context ends before anything reached the HTTP client — in
// the limiter's wait, or already cancelled — answers fleet.ErrNotSent; one
// cut after an attempt was sent (in the backoff, or in the limiter wait of
// a retry) does not: that attempt may have taken effect.
func TestDoCutBeforeSendingIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return answer(503, `{}`), nil
		}), rate.NewLimiter(rate.Every(time.Hour), 1))

		// The first call takes the only token and is sent; cut in its backoff.
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		_, err := c.Do(ctx, Request{Method: "GET", Path: "/x"}, nil)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualValues(t, 1, calls.Load())
		assert.NotErrorIs(t, err, fleet.ErrNotSent, "an attempt was sent: %v", err)

		// A POST cut in the limiter wait.
		ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
		_, err = c.Do(ctx, Request{Method: "POST", Path: "/x", Body: map[string]int{"a": 1}}, nil)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, fleet.ErrNotSent, "%v", err)
		assert.Contains(t, err.Error(), "request not sent")
		assert.EqualValues(t, 1, calls.Load(), "nothing more was sent")

		// A POST with a context cancelled before the call (no limiter).
		c2 := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			return answer(201, `{}`), nil
		}), nil)
		ctx, cancel = context.WithCancel(t.Context())
		cancel()
		_, err = c2.Do(ctx, Request{Method: "POST", Path: "/x"}, nil)
		require.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, fleet.ErrNotSent, "%v", err)
		assert.EqualValues(t, 1, calls.Load(), "nothing more was sent")
	})
}

// A POST cut while the API holds it was sent: not ErrNotSent.
func TestDoCutWhileSentIsNotNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}), nil)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err := c.Do(ctx, Request{Method: "POST", Path: "/x"}, nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, fleet.ErrNotSent, "%v", err)
	})
}
