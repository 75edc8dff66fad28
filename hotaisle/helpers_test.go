package hotaisle

import (
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/gpufleet/gpufleet/internal/api"
	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"
)

const (
	testKey  = "6ddfaa4539b4c7e046fe4b94.ee7003caf1bca1c01bb37b7a870af156d29bfdd5d86113eef99e2f476f91659c"
	testBase = "https://ha.test/api"
)

// seen is one request as the server got it.
type seen struct {
	Method, URL, RawPath, RawQuery string
	Header                         http.Header
	Body                           string
}

// mock is an httpmock transport that records every request.
type mock struct {
	*httpmock.MockTransport
	mu   sync.Mutex
	reqs []seen
}

// newMock returns a client for team "acme" on a fresh mock transport, with
// retries kept but delays tiny and the limiter off.
func newMock(t *testing.T, opts ...Option) (*Client, *mock) {
	t.Helper()
	m := &mock{MockTransport: httpmock.NewMockTransport()}
	base := []Option{WithBaseURL(testBase + "/"), WithHTTPClient(&http.Client{Transport: m}),
		WithRateLimit(0, 0), WithRetryPolicy(RetryPolicy{Attempts: 3, MinDelay: 1, MaxDelay: 2})}
	return New(testKey, "acme", append(base, opts...)...), m
}

// on registers an exact method and URL (path under testBase, with query)
// answering status and body, and records the requests.
func (m *mock) on(method, path string, status int, body string, hdr ...string) {
	m.RegisterResponder(method, testBase+path, m.record(status, body, hdr...))
}

func (m *mock) record(status int, body string, hdr ...string) httpmock.Responder {
	return func(r *http.Request) (*http.Response, error) {
		var b []byte
		if r.Body != nil {
			b, _ = io.ReadAll(r.Body)
		}
		m.mu.Lock()
		m.reqs = append(m.reqs, seen{Method: r.Method, URL: r.URL.String(), RawPath: r.URL.EscapedPath(),
			RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(b)})
		m.mu.Unlock()
		resp := httpmock.NewStringResponse(status, body)
		for i := 0; i+1 < len(hdr); i += 2 {
			resp.Header.Set(hdr[i], hdr[i+1])
		}
		return resp, nil
	}
}

// last returns the only or last request recorded.
func (m *mock) last(t *testing.T) seen {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	require.NotEmpty(t, m.reqs, "no request reached the mock")
	return m.reqs[len(m.reqs)-1]
}

func (m *mock) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs)
}

func apiReq(method, path string) api.Request { return api.Request{Method: method, Path: path} }
