package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a server that answers 200 {} and keeps the Authorization
// header of every request it gets.
type recorder struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newRecorder(t *testing.T, tls bool, next func(w http.ResponseWriter, r *http.Request) bool) *recorder {
	rec := &recorder{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.auths = append(rec.auths, r.Header.Get("Authorization"))
		rec.mu.Unlock()
		if next != nil && next(w, r) {
			return
		}
		_, _ = w.Write([]byte(`{}`))
	})
	if tls {
		rec.Server = httptest.NewTLSServer(h)
	} else {
		rec.Server = httptest.NewServer(h)
	}
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}

func redirectTo(target string) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/start" {
			http.Redirect(w, r, target, http.StatusFound)
			return true
		}
		return false
	}
}

func keyClient(base string, hc *http.Client) *Client {
	return New(Config{Provider: "test", BaseURL: base, HTTPClient: hc,
		Authorize:  func(h http.Header) { h.Set("Authorization", "Bearer secret-key") },
		ParseError: func(r *Response) error { return &testErr{status: r.Status} }})
}

// The key stays on its origin: a redirect to another port of the same host
// (net/http would keep the header) reaches the other server without it.
func TestRedirectToAnotherOriginDropsTheKey(t *testing.T) {
	b := newRecorder(t, false, nil)
	a := newRecorder(t, false, redirectTo(b.URL+"/landing"))
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	c := keyClient(a.URL, hc)
	var out map[string]any
	_, err := c.Do(context.Background(), Request{Method: "GET", Path: "/start"}, &out)
	require.NoError(t, err)
	assert.Equal(t, []string{"Bearer secret-key"}, a.got())
	assert.Equal(t, []string{""}, b.got(), "server B got no key")
	assert.Nil(t, hc.CheckRedirect, "the caller's http.Client is not changed")
}

// A redirect inside the origin keeps the key.
func TestRedirectInsideTheOriginKeepsTheKey(t *testing.T) {
	var a *recorder
	a = newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) bool {
		return redirectTo(a.URL+"/landing")(w, r)
	})
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	var out map[string]any
	_, err := keyClient(a.URL, hc).Do(context.Background(), Request{Method: "GET", Path: "/start"}, &out)
	require.NoError(t, err)
	assert.Equal(t, []string{"Bearer secret-key", "Bearer secret-key"}, a.got())
}

// https → http is refused before anything is sent to the http server, and
// the refusal is not retried.
func TestRedirectFromHTTPSToHTTPIsRefused(t *testing.T) {
	b := newRecorder(t, false, nil)
	a := newRecorder(t, true, redirectTo(b.URL+"/landing"))
	hc := a.Client()
	defer hc.CloseIdleConnections()
	_, err := keyClient(a.URL, hc).Do(context.Background(), Request{Method: "GET", Path: "/start"}, nil)
	var re *RedirectError
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, b.URL, re.To)
	assert.Equal(t, a.URL, re.From)
	assert.Contains(t, err.Error(), "test: GET /start: refused a redirect")
	assert.False(t, Transient(err))
	assert.Len(t, a.got(), 1, "not retried")
	assert.Empty(t, b.got(), "nothing reached the http server")
}

// The caller's own redirect policy is still asked.
func TestRedirectKeepsTheCallersPolicy(t *testing.T) {
	b := newRecorder(t, false, nil)
	a := newRecorder(t, false, redirectTo(b.URL+"/landing"))
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer hc.CloseIdleConnections()
	_, err := keyClient(a.URL, hc).Do(context.Background(), Request{Method: "GET", Path: "/start"}, nil)
	var te *testErr
	require.ErrorAs(t, err, &te)
	assert.Equal(t, http.StatusFound, te.status)
	assert.Empty(t, b.got())
}

func TestOrigin(t *testing.T) {
	for _, u := range []string{"https://API.example.com/v2", "https://api.example.com:443/x"} {
		assert.Equal(t, "https://api.example.com:443", origin(mustURL(t, u)))
	}
	assert.NotEqual(t, origin(mustURL(t, "http://a:80")), origin(mustURL(t, "https://a:80")))
	assert.NotEqual(t, origin(mustURL(t, "http://127.0.0.1:1")), origin(mustURL(t, "http://127.0.0.1:2")))
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
