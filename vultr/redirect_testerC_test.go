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
