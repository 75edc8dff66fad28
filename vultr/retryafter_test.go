package vultr_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/require"
)

// Retry-After forms, retries only for idempotent calls,
// cancellation during a backoff; in memory inside a synctest bubble.

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answering serves status with Retry-After ra to every call, counting them.
func answering(status int, ra func() string, calls *atomic.Int32) *http.Client {
	return &http.Client{Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		h := http.Header{"Content-Type": {"application/json"}}
		if v := ra(); v != "" {
			h.Set("Retry-After", v)
		}
		return &http.Response{StatusCode: status, Header: h, Request: r,
			Body: io.NopCloser(strings.NewReader(`{"error":"slow down","status":429}`))}, nil
	})}
}

func TestRetryAfterForms(t *testing.T) {
	for name, tc := range map[string]struct {
		ra      func() string
		atLeast time.Duration // first retry not before
		atMost  time.Duration
	}{
		"http date 2m ahead": {func() string { return time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat) }, 119 * time.Second, 121 * time.Second},
		"garbage":            {func() string { return "soon" }, 0, 30 * time.Second},
		"fraction":           {func() string { return "1.5" }, 0, 30 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				c := vultr.New("TESTER2-KEY-0123456789", vultr.WithHTTPClient(answering(429, tc.ra, &calls)),
					vultr.WithRateLimit(0, 0), vultr.WithRetry(2, time.Second, 30*time.Second))
				ctx, cancel := context.WithTimeout(t.Context(), 48*time.Hour)
				defer cancel()
				start := time.Now()
				_, err := c.GetInstance(ctx, "x")
				took := time.Since(start)
				require.Error(t, err)
				require.EqualValues(t, 2, calls.Load())
				require.GreaterOrEqual(t, took, tc.atLeast)
				require.LessOrEqual(t, took, tc.atMost, "wait before the retry")
			})
		})
	}
}

func TestCreateNeverRetried(t *testing.T) {
	for _, status := range []int{429, 500, 502, 503, 504} {
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			c := vultr.New("k", vultr.WithHTTPClient(answering(status, func() string { return "1" }, &calls)), vultr.WithRateLimit(0, 0))
			_, err := c.CreateInstance(t.Context(), &vultr.InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb", OSID: 1743})
			require.Error(t, err)
			require.EqualValues(t, 1, calls.Load(), "status %d", status)
		})
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		c := vultr.New("k", vultr.WithHTTPClient(answering(503, func() string { return "600" }, &calls)), vultr.WithRateLimit(0, 0))
		ctx, cancel := context.WithCancel(t.Context())
		go func() { time.Sleep(10 * time.Second); cancel() }()
		start := time.Now()
		_, err := c.GetInstance(ctx, "x")
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 10*time.Second, time.Since(start))
		var ae *vultr.APIError
		require.True(t, errors.As(err, &ae), "the last answer stays visible: %v", err)
	})
}
