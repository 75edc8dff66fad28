package hotaisle

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

// A VM DELETE answered with a 301/302/303 redirect on the same origin (a
// proxy, or a path canonicalisation: the spec leaves the server's handling
// of paths open): net/http re-sends it as a GET, the GET answers 200 with the
// VM, and DeleteVM returns nil. Hot Aisle's DELETE "will not return until the
// reset is complete", so a nil error is taken as "gone": the Manager stops
// tracking a VM that keeps billing. Expected: an error, since no DELETE was
// carried out (issue 12 point 1: the client owns how redirects are followed;
// README: "Every non-2xx answer is a typed *APIError").
func TestTesterCDeleteRedirectedIntoAGetIsNotASuccess(t *testing.T) {
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			var mu sync.Mutex
			var methods []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				methods = append(methods, r.Method)
				mu.Unlock()
				if r.URL.Path == "/api/teams/acme/virtual_machines/enc1-gpuvm022/" {
					http.Redirect(w, r, "/api/teams/acme/virtual_machines/enc1-gpuvm022/x/", code)
					return
				}
				if r.Method == http.MethodDelete {
					w.WriteHeader(http.StatusNoContent)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(e4VM))
			}))
			defer srv.Close()
			c := New("6ddfaa4539b4c7e046fe4b94.ee70aa", "acme", WithBaseURL(srv.URL+"/api"),
				WithHTTPClient(&http.Client{Timeout: 5 * time.Second}), WithRateLimit(0, 0), WithRetry(1, 0, 0))
			err := c.DeleteVM(context.Background(), "enc1-gpuvm022", true)
			mu.Lock()
			seen := append([]string(nil), methods...)
			mu.Unlock()
			assert.Equal(t, []string{http.MethodDelete, http.MethodGet}, seen)
			require.Error(t, err, "only a GET followed the redirect (methods seen: %v), yet DeleteVM reported the VM deleted", seen)
		})
	}
}
