package vultr

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// reply is one canned answer of a shaped server.
type reply struct {
	status int
	body   string
	header map[string]string
}

// shaped is an httptest server that answers like the Vultr API: JSON
// bodies, {"error":...,"status":...} errors, exact paths ("METHOD /path",
// query ignored). An unknown route answers 404 "Not found." as Vultr does.
// It counts the calls per route.
type shaped struct {
	*httptest.Server
	mu     sync.Mutex
	routes map[string]reply
	calls  map[string]int
}

func newShaped(t *testing.T, routes map[string]reply) (*shaped, *Client) {
	t.Helper()
	s := &shaped{routes: routes, calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	hc := &http.Client{}
	t.Cleanup(hc.CloseIdleConnections)
	return s, New(testKey, WithBaseURL(s.URL), WithHTTPClient(hc), WithRateLimit(0, 0), WithRetry(1, 0, 0))
}

func (s *shaped) serve(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	s.mu.Lock()
	s.calls[key]++
	rep, ok := s.routes[key]
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		rep = reply{status: 404, body: `{"error":"Not found.","status":404}`}
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.status)
	_, _ = w.Write([]byte(rep.body))
}

func (s *shaped) set(route string, rep reply) {
	s.mu.Lock()
	s.routes[route] = rep
	s.mu.Unlock()
}

func (s *shaped) count(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}
