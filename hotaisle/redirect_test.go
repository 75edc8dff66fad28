package hotaisle

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

// keyCatcher is a server that answers like GET .../virtual_machines/ (an
// empty list) and keeps the Authorization header of every request.
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
		_, _ = w.Write([]byte(`[]`))
	}))
	t.Cleanup(k.Close)
	return k
}

func (k *keyCatcher) got() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.auths...)
}

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

// The API at 127.0.0.1:A redirects to 127.0.0.1:B: B gets nothing, the
// "Token" key least of all, and the call fails with the redirect named.
func TestRedirectToAnotherPortSendsNothingThere(t *testing.T) {
	b := newKeyCatcher(t)
	a := redirector(t, false, b.URL)
	hc := &http.Client{}
	t.Cleanup(hc.CloseIdleConnections)
	c := New(testKey, "acme", WithBaseURL(a.URL+"/api"), WithHTTPClient(hc), WithRateLimit(0, 0))
	vms, err := c.ListVMs(t.Context())
	var re *RedirectError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, b.URL, re.To)
	assert.Nil(t, vms)
	assert.Empty(t, b.got())
	assert.Nil(t, hc.CheckRedirect, "the caller's http.Client is not changed")
}

// An https API redirecting to http: nothing is sent to the http server.
func TestRedirectToPlainHTTPSendsNothing(t *testing.T) {
	b := newKeyCatcher(t)
	a := redirector(t, true, b.URL)
	hc := a.Client()
	t.Cleanup(hc.CloseIdleConnections)
	c := New(testKey, "acme", WithBaseURL(a.URL+"/api"), WithHTTPClient(hc), WithRateLimit(0, 0))
	_, err := c.ListVMs(t.Context())
	var re *RedirectError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "hotaisle", re.Provider)
	assert.Empty(t, b.got())
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

// canonicalServer redirects every path not ending in "/x/" there with code
// and answers those as a success would (204 to a DELETE, the VM otherwise):
// a client that followed the redirect would report success.
func canonicalServer(t *testing.T, code int, seen *methodLog) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.add(r.Method)
		if !strings.HasSuffix(r.URL.Path, "/x/") {
			http.Redirect(w, r, r.URL.Path+"x/", code)
			return
		}
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(e4VM))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// redirectCalls are client calls of every method the API takes.
var redirectCalls = []struct {
	name, method string
	call         func(ctx context.Context, c *Client) error
}{
	{"DeleteVM", "DELETE", func(ctx context.Context, c *Client) error { return c.DeleteVM(ctx, "enc1-gpuvm022", true) }},
	{"ReleaseBareMetal", "DELETE", func(ctx context.Context, c *Client) error { return c.ReleaseBareMetal(ctx, "bm1", false) }},
	{"GetVM", "GET", func(ctx context.Context, c *Client) error { _, err := c.GetVM(ctx, "enc1-gpuvm022"); return err }},
	{"UpdateVM", "PATCH", func(ctx context.Context, c *Client) error {
		return c.UpdateVM(ctx, "enc1-gpuvm022", VMUpdate{Description: "d"})
	}},
	{"ProvisionVM", "POST", func(ctx context.Context, c *Client) error {
		_, err := c.ProvisionVM(ctx, VMProvisionRequest{VMSpecs: VMSpecs{CPUCores: 13}})
		return err
	}},
}

// A call answered with any redirect fails with a typed *APIError carrying
// the 3xx status, of class fleet.ErrUnavailable (never fleet.ErrNotFound,
// which a delete would take for "gone"), unwrapping to a *RedirectError;
// only the first request was sent (no GET after a 301/302/303, no repeat
// after a 307/308), and it is not retried.
func TestRedirectIsATypedErrorForEveryMethod(t *testing.T) {
	codes := []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect}
	for _, code := range codes {
		for _, tc := range redirectCalls {
			t.Run(fmt.Sprintf("%d %s", code, tc.name), func(t *testing.T) {
				var seen methodLog
				srv := canonicalServer(t, code, &seen)
				c := New(testKey, "acme", WithBaseURL(srv.URL+"/api"), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
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
				assert.True(t, strings.HasSuffix(re.Location, "/x/"), re.Location)
				assert.Contains(t, err.Error(), "not followed")
				assert.Equal(t, []string{tc.method}, seen.all())
			})
		}
	}
}

// A VM DELETE answered with a 301/302/303 redirect: net/http would re-send
// it as a GET, the GET would answer 200 with the VM, and DeleteVM would
// return nil. Hot Aisle's DELETE "will not return until the reset is
// complete", so nil is taken as "gone": the Manager would stop tracking a
// VM that keeps billing.
func TestDeleteRedirectedIntoAGetIsNotASuccess(t *testing.T) {
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			var seen methodLog
			srv := canonicalServer(t, code, &seen)
			c := New("6ddfaa4539b4c7e046fe4b94.ee70aa", "acme", WithBaseURL(srv.URL+"/api"),
				WithHTTPClient(&http.Client{Timeout: 5 * time.Second}), WithRateLimit(0, 0), WithRetry(1, 0, 0))
			err := c.DeleteVM(context.Background(), "enc1-gpuvm022", true)
			require.Error(t, err, "DeleteVM reported the VM deleted (methods seen: %v)", seen.all())
			assert.Equal(t, []string{http.MethodDelete}, seen.all(), "no GET followed the redirect")
		})
	}
}

// Through the provider, a redirected release is neither gone nor accepted.
func TestProviderDeleteRedirectedIsNotGone(t *testing.T) {
	var seen methodLog
	srv := canonicalServer(t, http.StatusFound, &seen)
	c := New(testKey, "acme", WithBaseURL(srv.URL+"/api"), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
		WithRateLimit(0, 0), WithRetry(1, 0, 0))
	err := NewProvider(c).Delete(context.Background(), "enc1-gpuvm022", fleet.DeleteOptions{Force: true})
	require.Error(t, err)
	assert.False(t, errors.Is(err, fleet.ErrNotFound))
	assert.True(t, errors.Is(err, fleet.ErrUnavailable))
	for _, m := range seen.all() {
		assert.Equal(t, http.MethodDelete, m)
	}
}
