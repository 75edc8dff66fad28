package hotaisle

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
}

// shaped is an httptest server that answers like the Hot Aisle API under
// /api: JSON bodies, errors as a JSON string, exact paths with their trailing
// "/" ("METHOD /api/...", query ignored). An unknown route answers 404
// "Not Found: Resource not found". It counts the calls per route.
type shaped struct {
	*httptest.Server
	mu     sync.Mutex
	routes map[string]reply
	calls  map[string]int
}

func newShaped(t *testing.T, routes map[string]reply, opts ...Option) (*shaped, *Client) {
	t.Helper()
	s := &shaped{routes: routes, calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	hc := &http.Client{}
	t.Cleanup(hc.CloseIdleConnections)
	base := []Option{WithBaseURL(s.URL + "/api"), WithHTTPClient(hc), WithRateLimit(0, 0), WithRetry(1, 0, 0)}
	return s, New(testKey, "acme", append(base, opts...)...)
}

func (s *shaped) serve(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	s.mu.Lock()
	s.calls[key]++
	rep, ok := s.routes[key]
	s.mu.Unlock()
	if !ok {
		rep = reply{404, `"Not Found: Resource not found"`}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = w.Write([]byte(rep.body))
}

func (s *shaped) count(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}
