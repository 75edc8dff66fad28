package hotaisle

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

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

// The API at 127.0.0.1:A redirects to 127.0.0.1:B: B gets no "Token" key.
func TestRedirectToAnotherPortCarriesNoKey(t *testing.T) {
	b := newKeyCatcher(t)
	a := redirector(t, false, b.URL)
	hc := &http.Client{}
	t.Cleanup(hc.CloseIdleConnections)
	c := New(testKey, "acme", WithBaseURL(a.URL+"/api"), WithHTTPClient(hc), WithRateLimit(0, 0))
	vms, err := c.ListVMs(t.Context())
	require.NoError(t, err)
	assert.Empty(t, vms)
	assert.Equal(t, []string{""}, b.got())
}

// An https API redirecting to http is refused before anything is sent.
func TestRedirectToPlainHTTPIsRefused(t *testing.T) {
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
