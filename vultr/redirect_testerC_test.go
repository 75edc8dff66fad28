package vultr

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

func (l *methodLog) count(m string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.methods {
		if x == m {
			n++
		}
	}
	return n
}

// A DELETE answered with a 301/302/303 redirect (a load balancer or a path
// canonicalisation on the same origin): net/http follows it as a GET, the GET
// answers 200 with the server, and DeleteInstance reports success although no
// DELETE was ever carried out. A user (and the Manager, which then waits for
// a 404 that never comes, or trusts the answer) expects an error: the release
// did not happen and the server keeps billing. Issue 12 point 1 makes the
// client responsible for how it follows redirects; the README says "Every
// non-2xx answer is a typed *APIError", and a method-changing redirect is
// not a 2xx answer to the DELETE.
func TestTesterCDeleteRedirectedIntoAGetIsNotASuccess(t *testing.T) {
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			var seen methodLog
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen.add(r.Method)
				if r.URL.Path == "/v2/instances/abc" {
					http.Redirect(w, r, "/v2/instances/abc/canonical", code)
					return
				}
				switch r.Method {
				case http.MethodDelete:
					w.WriteHeader(http.StatusNoContent)
				default:
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"instance":{"id":"abc","status":"active","label":"x"}}`))
				}
			}))
			defer srv.Close()
			c := New("K3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3Y", WithBaseURL(srv.URL),
				WithHTTPClient(&http.Client{Timeout: 5 * time.Second}), WithRateLimit(0, 0), WithRetry(1, 0, 0))
			err := c.DeleteInstance(context.Background(), "abc")
			assert.Equal(t, 1, seen.count(http.MethodDelete), "the server saw only the first DELETE")
			require.Error(t, err, "no DELETE reached the server after the redirect (methods seen: %v), "+
				"yet DeleteInstance reported success", seen.methods)
		})
	}
}

// A Vultr key read from a file or an environment line keeps its trailing
// newline. Hot Aisle's New trims white space around its key; vultr.New does
// not, so every call fails in the transport ("invalid header field value")
// and is reported as fleet.ErrUnavailable (the provider looks down) after
// five retries, instead of working or being refused as a bad key. Expected:
// the two clients treat the key alike (trimmed, as hotaisle.New documents).
func TestTesterCKeyWithTrailingNewlineWorks(t *testing.T) {
	var auth string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(fixtureVPC))
	}))
	defer srv.Close()
	const key = "K3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3Y"
	c := New(key+"\n", WithBaseURL(srv.URL), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
		WithRateLimit(0, 0), WithRetry(1, 0, 0))
	_, err := c.GetVPC(context.Background(), "6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90")
	require.NoError(t, err, "a key with a trailing newline (as read from a file) should work as hotaisle.New's does")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "Bearer "+key, auth)
}
