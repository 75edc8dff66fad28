package vultr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyCatcher is a server that answers like GET /v2/vpcs/{id} and keeps the
// Authorization header of every request.
type keyCatcher struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newKeyCatcher(t *testing.T) *keyCatcher {
	k := &keyCatcher{}
	k.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		k.auths = append(k.auths, r.Header.Get("Authorization"))
		k.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(fixtureVPC))
	}))
	t.Cleanup(k.Close)
	return k
}

func (k *keyCatcher) got() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.auths...)
}

// redirector answers every request with 302 to target + the request path.
func redirector(t *testing.T, tls bool, target string) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusFound)
	})
	var s *httptest.Server
	if tls {
		s = httptest.NewTLSServer(h)
	} else {
		s = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

// The API at 127.0.0.1:A redirects to 127.0.0.1:B: B gets nothing (the key
// least of all: net/http keeps it when only the port changes), and the
// call fails with the redirect named.
func TestRedirectToAnotherPortSendsNothingThere(t *testing.T) {
	b := newKeyCatcher(t)
	a := redirector(t, false, b.URL)
	hc := &http.Client{}
	t.Cleanup(hc.CloseIdleConnections)
	c := New(testKey, WithBaseURL(a.URL), WithHTTPClient(hc), WithRateLimit(0, 0))
	_, err := c.GetVPC(t.Context(), "6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90")
	var re *RedirectError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, b.URL, re.To)
	assert.Empty(t, b.got())
	assert.Nil(t, hc.CheckRedirect, "the caller's http.Client is not changed")
}

// An https API redirecting to http: the http server gets nothing.
func TestRedirectToPlainHTTPSendsNothing(t *testing.T) {
	b := newKeyCatcher(t)
	a := redirector(t, true, b.URL)
	hc := a.Client()
	t.Cleanup(hc.CloseIdleConnections)
	c := New(testKey, WithBaseURL(a.URL), WithHTTPClient(hc), WithRateLimit(0, 0))
	_, err := c.GetVPC(t.Context(), "v1")
	var re *RedirectError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "vultr", re.Provider)
	assert.Equal(t, a.URL, re.From)
	assert.Empty(t, b.got())
	assert.NotContains(t, err.Error(), testKey)
}

// methodLog records the methods a test server saw.
type methodLog struct {
	mu      sync.Mutex
	methods []string
}

func (l *methodLog) add(m string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.methods = append(l.methods, m)
}

func (l *methodLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.methods...)
}

// canonicalServer redirects every path not ending in "/canonical" there
// with code, and answers the canonical paths as a success would: 204 to a
// DELETE, 200 with every object an answer may carry otherwise. A client
// that followed the redirect would report success.
func canonicalServer(t *testing.T, code int, seen *methodLog) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.add(r.Method)
		if !strings.HasSuffix(r.URL.Path, "/canonical") {
			http.Redirect(w, r, r.URL.Path+"/canonical", code)
			return
		}
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"instance":{"id":"abc","status":"active","label":"x"},` +
			`"bare_metal":{"id":"abc","status":"active","label":"x"},"vpc":` + fixtureVPCObj + `}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// redirectCalls are client calls of every method the API takes.
var redirectCalls = []struct {
	name, method string
	call         func(ctx context.Context, c *Client) error
}{
	{"DeleteInstance", "DELETE", func(ctx context.Context, c *Client) error { return c.DeleteInstance(ctx, "abc") }},
	{"DeleteBareMetal", "DELETE", func(ctx context.Context, c *Client) error { return c.DeleteBareMetal(ctx, "abc") }},
	{"DeleteVPC", "DELETE", func(ctx context.Context, c *Client) error { return c.DeleteVPC(ctx, "v1") }},
	{"GetInstance", "GET", func(ctx context.Context, c *Client) error { _, err := c.GetInstance(ctx, "abc"); return err }},
	{"UpdateInstance", "PATCH", func(ctx context.Context, c *Client) error {
		_, err := c.UpdateInstance(ctx, "abc", &InstanceUpdate{Label: "y"})
		return err
	}},
	{"CreateInstance", "POST", func(ctx context.Context, c *Client) error {
		_, err := c.CreateInstance(ctx, &InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb", OSID: 1743})
		return err
	}},
	{"AttachInstanceVPC", "POST", func(ctx context.Context, c *Client) error { return c.AttachInstanceVPC(ctx, "abc", "v1") }},
	{"UpdateVPC", "PUT", func(ctx context.Context, c *Client) error { return c.UpdateVPC(ctx, "v1", "d") }},
}

// A call answered with any redirect (a load balancer, a path
// canonicalisation) fails with a typed *APIError carrying the 3xx status,
// of class fleet.ErrUnavailable (never fleet.ErrNotFound, which a delete
// would take for "gone"), unwrapping to a *RedirectError; only the first
// request was sent (no GET after a 301/302/303, no repeat after a 307/308),
// and it is not retried.
func TestRedirectIsATypedErrorForEveryMethod(t *testing.T) {
	codes := []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect}
	for _, code := range codes {
		for _, tc := range redirectCalls {
			t.Run(fmt.Sprintf("%d %s", code, tc.name), func(t *testing.T) {
				var seen methodLog
				srv := canonicalServer(t, code, &seen)
				c := New(testKey, WithBaseURL(srv.URL), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
					WithRateLimit(0, 0), WithRetry(3, time.Millisecond, time.Millisecond))
				err := tc.call(context.Background(), c)
				var ae *APIError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, code, ae.Status)
				assert.Equal(t, tc.method, ae.Method)
				assert.True(t, errors.Is(err, fleet.ErrUnavailable), "%v", err)
				assert.False(t, errors.Is(err, fleet.ErrNotFound))
				var re *RedirectError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, code, re.Status)
				assert.True(t, strings.HasSuffix(re.Location, "/canonical"), re.Location)
				assert.Contains(t, err.Error(), "not followed")
				assert.Equal(t, []string{tc.method}, seen.all())
			})
		}
	}
}

// A DELETE answered with a 301/302/303 redirect: net/http would follow it
// as a GET, the GET would answer 200 with the server, and the release would
// pass for done although no DELETE was carried out and the server keeps
// billing.
func TestDeleteRedirectedIntoAGetIsNotASuccess(t *testing.T) {
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			var seen methodLog
			srv := canonicalServer(t, code, &seen)
			c := New("K3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3Y", WithBaseURL(srv.URL),
				WithHTTPClient(&http.Client{Timeout: 5 * time.Second}), WithRateLimit(0, 0), WithRetry(1, 0, 0))
			err := c.DeleteInstance(context.Background(), "abc")
			require.Error(t, err, "DeleteInstance reported success (methods seen: %v)", seen.all())
			assert.Equal(t, []string{http.MethodDelete}, seen.all(), "no GET followed the redirect")
		})
	}
}

// Through the provider, a redirected release is neither gone nor accepted:
// the Manager keeps the server and tries again.
func TestProviderDeleteRedirectedIsNotGone(t *testing.T) {
	var seen methodLog
	srv := canonicalServer(t, http.StatusFound, &seen)
	c := New(testKey, WithBaseURL(srv.URL), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
		WithRateLimit(0, 0), WithRetry(1, 0, 0))
	err := NewProvider(c).Delete(context.Background(), "abc", fleet.DeleteOptions{})
	require.Error(t, err)
	assert.False(t, errors.Is(err, fleet.ErrNotFound))
	assert.False(t, errors.Is(err, fleet.ErrDeletePending))
	assert.True(t, errors.Is(err, fleet.ErrUnavailable))
	for _, m := range seen.all() {
		assert.Equal(t, http.MethodDelete, m)
	}
}
