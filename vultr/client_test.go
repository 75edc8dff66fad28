package vultr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testKey  = "vk-TOPSECRET-0123456789"
	testBase = "https://vultr.test"
)

// mockClient returns a Client on an httpmock transport, without rate limit.
func mockClient(t *testing.T, opts ...Option) (*Client, *httpmock.MockTransport) {
	t.Helper()
	mt := httpmock.NewMockTransport()
	base := []Option{WithBaseURL(testBase), WithHTTPClient(&http.Client{Transport: mt}), WithRateLimit(0, 0)}
	return New(testKey, append(base, opts...)...), mt
}

// seen is what a responder observed of one request.
type seen struct {
	Method, Path, Query, Auth, Accept, ContentType, UserAgent string
	Body                                                      []byte
}

// record registers a responder for method+path (any query) that records the
// request and answers status with body.
func record(t *testing.T, mt *httpmock.MockTransport, method, path string, status int, body string) *[]seen {
	t.Helper()
	var got []seen
	mt.RegisterResponder(method, testBase+path, func(r *http.Request) (*http.Response, error) {
		var b []byte
		if r.Body != nil {
			b, _ = io.ReadAll(r.Body)
		}
		got = append(got, seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Auth: r.Header.Get("Authorization"), Accept: r.Header.Get("Accept"),
			ContentType: r.Header.Get("Content-Type"), UserAgent: r.Header.Get("User-Agent"), Body: b})
		resp := httpmock.NewStringResponse(status, body)
		resp.Header.Set("Content-Type", "application/json")
		return resp, nil
	})
	return &got
}

func TestHeadersBearerAcceptUserAgent(t *testing.T) {
	c, mt := mockClient(t, WithUserAgent("fleet-test/1"))
	got := record(t, mt, "GET", "/v2/vpcs/v1", 200, `{"vpc":{"id":"v1"}}`)
	_, err := c.GetVPC(t.Context(), "v1")
	require.NoError(t, err)
	require.Len(t, *got, 1)
	s := (*got)[0]
	assert.Equal(t, "Bearer "+testKey, s.Auth)
	assert.Equal(t, "application/json", s.Accept)
	assert.Equal(t, "fleet-test/1", s.UserAgent)
	assert.Empty(t, s.ContentType, "no body, no Content-Type")
}

func TestEmptyKeySendsNoAuthorization(t *testing.T) {
	mt := httpmock.NewMockTransport()
	c := New("", WithBaseURL(testBase), WithHTTPClient(&http.Client{Transport: mt}))
	got := record(t, mt, "GET", "/v2/plans-metal", 200, `{"plans_metal":[]}`)
	_, err := Collect(c.ListMetalPlans(t.Context()))
	require.NoError(t, err)
	assert.Empty(t, (*got)[0].Auth)
	assert.Equal(t, DefaultUserAgent, (*got)[0].UserAgent)
}

// walkStrings calls f on every string reachable from v (fields, pointers,
// slices, maps, interfaces), unexported ones included.
func walkStrings(v reflect.Value, seenPtr map[uintptr]bool, f func(string)) {
	switch v.Kind() {
	case reflect.String:
		f(v.String())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Pointer {
			if seenPtr[v.Pointer()] {
				return
			}
			seenPtr[v.Pointer()] = true
		}
		walkStrings(v.Elem(), seenPtr, f)
	case reflect.Struct:
		for i := range v.NumField() {
			walkStrings(v.Field(i), seenPtr, f)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkStrings(v.Index(i), seenPtr, f)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			walkStrings(k, seenPtr, f)
			walkStrings(v.MapIndex(k), seenPtr, f)
		}
	}
}

func TestAPIKeyNeverLeaks(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, mt := mockClient(t, WithLogger(logger), WithRetry(2, time.Millisecond, time.Millisecond))
	record(t, mt, "GET", "/v2/instances/a", 401, `{"error":"Invalid API token.","status":401}`)
	mt.RegisterResponder("GET", testBase+"/v2/instances/b", httpmock.ConnectionFailure)
	record(t, mt, "POST", "/v2/instances", 400, `not json at all`)

	var errs []error
	_, err := c.GetInstance(t.Context(), "a")
	errs = append(errs, err)
	_, err = c.GetInstance(t.Context(), "b")
	errs = append(errs, err)
	_, err = c.CreateInstance(t.Context(), &InstanceCreate{Region: "ewr", Plan: "p", OSID: 1})
	errs = append(errs, err)

	var out strings.Builder
	for _, e := range errs {
		require.Error(t, e)
		fmt.Fprintf(&out, "%v|%+v|%#v|%s\n", e, e, e, e.Error())
	}
	fmt.Fprintf(&out, "%v|%+v|%#v|%s|%q|%x\n", c, c, c, c, c, c)
	fmt.Fprintf(&out, "%v|%+v\n", *c, *c)
	assert.NotContains(t, out.String(), testKey)
	assert.NotContains(t, out.String(), "TOPSECRET")
	assert.NotEmpty(t, logs.String(), "the logger was used")
	assert.NotContains(t, logs.String(), "TOPSECRET")
	assert.Equal(t, "vultr.Client{"+testBase+"}", c.String())

	// No string reachable from the Client value holds the key: it lives in
	// a closure only.
	walkStrings(reflect.ValueOf(c), map[uintptr]bool{}, func(s string) {
		assert.NotContains(t, s, "TOPSECRET")
	})
	assert.ErrorIs(t, errs[0], fleet.ErrUnauthorized)
	assert.ErrorIs(t, errs[1], fleet.ErrUnavailable)
}

func TestRetry429HonoursRetryAfterThenSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := mockClient(t)
		var calls atomic.Int32
		var at []time.Time
		mt.RegisterResponder("GET", testBase+"/v2/instances/i1", func(r *http.Request) (*http.Response, error) {
			at = append(at, time.Now())
			if calls.Add(1) == 1 {
				resp := httpmock.NewStringResponse(429, `{"error":"Rate limit reached - please try your request again later.","status":429}`)
				resp.Header.Set("Retry-After", "3")
				return resp, nil
			}
			return httpmock.NewStringResponse(200, `{"instance":{"id":"i1","status":"active"}}`), nil
		})
		inst, err := c.GetInstance(t.Context(), "i1")
		require.NoError(t, err)
		assert.Equal(t, "active", inst.Status)
		require.Len(t, at, 2)
		assert.Equal(t, 3*time.Second, at[1].Sub(at[0]), "waited exactly Retry-After")
	})
}

func TestRetryGivesUpWithRateLimitedError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := mockClient(t, WithRetry(3, time.Second, 2*time.Second))
		got := record(t, mt, "DELETE", "/v2/vpcs/v", 429, `{"error":"Rate limit reached","status":429}`)
		err := c.DeleteVPC(t.Context(), "v")
		var ae *APIError
		require.ErrorAs(t, err, &ae)
		assert.ErrorIs(t, err, fleet.ErrRateLimited)
		assert.Len(t, *got, 3)
	})
}

func TestRetryTransientDeleteThenSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := mockClient(t)
		var calls atomic.Int32
		mt.RegisterResponder("DELETE", testBase+"/v2/instances/i1", func(r *http.Request) (*http.Response, error) {
			switch calls.Add(1) {
			case 1:
				return nil, syscall.ECONNRESET
			case 2:
				return httpmock.NewStringResponse(503, `<html>busy</html>`), nil
			}
			return httpmock.NewStringResponse(204, ``), nil
		})
		require.NoError(t, c.DeleteInstance(t.Context(), "i1"))
		assert.EqualValues(t, 3, calls.Load())
	})
}

func TestNeverRetriedCalls(t *testing.T) {
	c, mt := mockClient(t, WithRetry(5, time.Millisecond, time.Millisecond))
	const unavailable = `{"error":"Service Unavailable","status":503}`
	creates := record(t, mt, "POST", "/v2/instances", 503, unavailable)
	bm := record(t, mt, "POST", "/v2/bare-metals", 502, unavailable)
	attach := record(t, mt, "POST", "/v2/instances/i/vpcs/attach", 503, unavailable)
	detach := record(t, mt, "POST", "/v2/bare-metals/b/vpcs/detach", 504, unavailable)
	patch := record(t, mt, "PATCH", "/v2/instances/i", 503, unavailable)
	ctx := t.Context()
	_, err := c.CreateInstance(ctx, &InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb", OSID: 1743})
	assert.ErrorIs(t, err, fleet.ErrUnavailable)
	_, err = c.CreateBareMetal(ctx, &BareMetalCreate{Region: "ewr", Plan: "vbm-4c-32gb", ImageID: "docker"})
	assert.ErrorIs(t, err, fleet.ErrUnavailable)
	assert.ErrorIs(t, c.AttachInstanceVPC(ctx, "i", "v"), fleet.ErrUnavailable)
	assert.ErrorIs(t, c.DetachBareMetalVPC(ctx, "b", "v"), fleet.ErrUnavailable)
	_, err = c.UpdateInstance(ctx, "i", &InstanceUpdate{Label: "x"})
	assert.ErrorIs(t, err, fleet.ErrUnavailable)
	for _, g := range []*[]seen{creates, bm, attach, detach, patch} {
		assert.Len(t, *g, 1)
	}
}

func TestDomainRefusalsAreNotRetried(t *testing.T) {
	c, mt := mockClient(t, WithRetry(5, time.Millisecond, time.Millisecond))
	locked := record(t, mt, "DELETE", "/v2/instances/l", 500,
		`{"error":"Unable to destroy server: Unable to remove VM: Server is currently locked","status":500}`)
	pending := record(t, mt, "DELETE", "/v2/instances/p", 500,
		`{"error":"Unable to destroy server: This subscription is not currently active, you cannot destroy it.","status":500}`)
	err := c.DeleteInstance(t.Context(), "l")
	assert.ErrorIs(t, err, fleet.ErrLocked)
	assert.NotErrorIs(t, err, fleet.ErrUnavailable)
	assert.ErrorIs(t, c.DeleteInstance(t.Context(), "p"), fleet.ErrNotActive)
	assert.Len(t, *locked, 1)
	assert.Len(t, *pending, 1)
}

func TestRateLimiterSharedByAllCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := mockClient(t, WithRateLimit(30, 1))
		record(t, mt, "GET", "/v2/vpcs/v", 200, `{"vpc":{"id":"v"}}`)
		record(t, mt, "GET", "/v2/ssh-keys/k", 200, `{"ssh_key":{"id":"k"}}`)
		start := time.Now()
		for range 30 {
			_, err := c.GetVPC(t.Context(), "v")
			require.NoError(t, err)
			_, err = c.GetSSHKey(t.Context(), "k")
			require.NoError(t, err)
		}
		// 60 calls at 30/s with a burst of 1: the first is free, 59 wait.
		assert.InDelta(t, float64(59*time.Second/30), float64(time.Since(start)), float64(time.Millisecond))
	})
}

func TestDefaultRateLimitIs30PerSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mt := httpmock.NewMockTransport()
		c := New(testKey, WithBaseURL(testBase), WithHTTPClient(&http.Client{Transport: mt}))
		record(t, mt, "GET", "/v2/vpcs/v", 200, `{"vpc":{"id":"v"}}`)
		start := time.Now()
		for range 31 {
			_, err := c.GetVPC(t.Context(), "v")
			require.NoError(t, err)
		}
		assert.Equal(t, time.Second, time.Since(start).Round(time.Millisecond))
	})
}

func TestContextCancelStopsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, mt := mockClient(t, WithRetry(100, time.Second, time.Minute))
		record(t, mt, "GET", "/v2/instances/x", 503, `{"error":"down","status":503}`)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
		defer cancel()
		_, err := c.GetInstance(ctx, "x")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var ae *APIError
		assert.True(t, errors.As(err, &ae), "the last API error stays visible")
	})
}
