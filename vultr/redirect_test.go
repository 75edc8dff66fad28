package vultr

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

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

// The API at 127.0.0.1:A redirects to 127.0.0.1:B: B gets the request
// without the key (net/http keeps it when only the port changes).
func TestRedirectToAnotherPortCarriesNoKey(t *testing.T) {
	b := newKeyCatcher(t)
	a := redirector(t, false, b.URL)
	hc := &http.Client{}
	t.Cleanup(hc.CloseIdleConnections)
	c := New(testKey, WithBaseURL(a.URL), WithHTTPClient(hc), WithRateLimit(0, 0))
	v, err := c.GetVPC(t.Context(), "6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90")
	require.NoError(t, err)
	assert.Equal(t, "ewr", v.Region)
	assert.Equal(t, []string{""}, b.got())
}

// An https API redirecting to http is refused: the key never travels in
// clear, the http server gets nothing.
func TestRedirectToPlainHTTPIsRefused(t *testing.T) {
	b := newKeyCatcher(t)
	a := redirector(t, true, b.URL)
	hc := a.Client()
	t.Cleanup(hc.CloseIdleConnections)
	c := New(testKey, WithBaseURL(a.URL), WithHTTPClient(hc), WithRateLimit(0, 0))
	_, err := c.GetVPC(t.Context(), "v1")
	var re *RedirectError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "vultr", re.Provider)
	assert.Empty(t, b.got())
	assert.NotContains(t, err.Error(), testKey)
}
