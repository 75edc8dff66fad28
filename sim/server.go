package sim

import (
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxBodyBytes is the largest request body the fakes read (1 MiB); a larger
// one is refused in the provider's dialect with 413.
const MaxBodyBytes = 1 << 20

// server is the request pipeline shared by both fakes: route lookup, auth,
// rate limit, faults, body limit, call log. Each fake embeds one and sets the
// hooks.
type server struct {
	name   string
	clock  Clock
	mux    *http.ServeMux
	routes map[string]bool // display patterns ("GET /api/user/")
	public map[string]bool // display patterns that need no key

	// writeError answers an error in the provider's dialect.
	writeError func(w http.ResponseWriter, status int, msg string)
	// authorized reports whether the request carries the right key.
	authorized func(r *http.Request) bool
	// limit, if set, is consulted for every authorized call; it returns false
	// and the Retry-After to send when the call is over the rate limit.
	limit func(r *http.Request) (ok bool, retryAfter time.Duration)

	mu     sync.Mutex // guards faults, calls, rng
	faults []*activeFault
	calls  []Call
	rng    *rand.Rand
}

func newServer(name string, st *settings) *server {
	return &server{
		name:   name,
		clock:  st.clock,
		mux:    http.NewServeMux(),
		routes: map[string]bool{},
		public: map[string]bool{},
		rng:    rand.New(rand.NewPCG(st.seed, st.seed^0x9e3779b97f4a7c15)),
	}
}

type routeKey struct{}

// handle registers h for pattern. A pattern ending in "/{$}" is listed (and
// named by faults) without the "{$}".
func (s *server) handle(pattern string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, h)
	s.routes[displayRoute(pattern)] = true
}

// handlePublic registers a route that needs no API key.
func (s *server) handlePublic(pattern string, h http.HandlerFunc) {
	s.handle(pattern, h)
	s.public[displayRoute(pattern)] = true
}

func displayRoute(pattern string) string { return strings.TrimSuffix(pattern, "{$}") }

// Routes lists the served route patterns, sorted; these are the names a
// Fault's Route may take.
func (s *server) Routes() []string {
	out := make([]string, 0, len(s.routes))
	for r := range s.routes {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Calls returns a copy of the call log, oldest first.
func (s *server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// ResetCalls empties the call log.
func (s *server) ResetCalls() {
	s.mu.Lock()
	s.calls = nil
	s.mu.Unlock()
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// discardWriter swallows a handler's answer (for AfterCommit faults).
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// ServeHTTP runs the pipeline: route, auth, rate limit, fault, handler.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := Call{Time: s.clock.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery}
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		call.Status = sw.status
		s.mu.Lock()
		s.calls = append(s.calls, call)
		s.mu.Unlock()
	}()
	_, pattern := s.mux.Handler(r)
	route := displayRoute(pattern)
	call.Route = route
	if route == "" || !s.routes[route] {
		s.writeError(sw, http.StatusNotFound, "")
		return
	}
	if !s.public[route] && !s.authorized(r) {
		s.writeError(sw, http.StatusUnauthorized, "")
		return
	}
	if s.limit != nil {
		if ok, after := s.limit(r); !ok {
			setRetryAfter(sw, after)
			s.writeError(sw, http.StatusTooManyRequests, "")
			return
		}
	}
	r.Body = http.MaxBytesReader(sw, r.Body, MaxBodyBytes)
	f, reset := s.takeFault(route)
	if f != nil {
		call.Fault = true
		if f.AfterCommit {
			s.mux.ServeHTTP(&discardWriter{h: http.Header{}}, r)
		}
		if reset {
			panic(http.ErrAbortHandler)
		}
		setRetryAfter(sw, f.RetryAfter)
		s.writeError(sw, f.Status, f.Message)
		return
	}
	s.mux.ServeHTTP(sw, r) // dispatch through the mux so r.PathValue is filled
}

func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	if d <= 0 {
		return
	}
	secs := int((d + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
}

// decodeJSON reads a JSON request body into v. It reports a body over
// MaxBodyBytes as 413 and anything malformed as 400, with a message.
func decodeJSON(r *http.Request, v any) (status int, msg string) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return http.StatusRequestEntityTooLarge, "Request body too large."
		}
		return http.StatusBadRequest, "Unable to read request body."
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return http.StatusBadRequest, "Request body is empty."
	}
	if err := json.Unmarshal(data, v); err != nil {
		return http.StatusBadRequest, "Malformed JSON: " + err.Error()
	}
	return 0, ""
}

// writeJSON answers status with v encoded as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Client returns an *http.Client whose transport calls the fake in memory, no
// sockets involved: any URL host reaches the fake, so a client left on its
// real default base URL works unchanged. Safe inside testing/synctest.
func (s *server) Client() *http.Client {
	return &http.Client{Transport: &memTransport{h: s}}
}
