package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// MaxBodyBytes is the largest request body the fakes read (1 MiB); a larger
// one is refused in the provider's dialect with 413.
const MaxBodyBytes = 1 << 20

// config is what the pipeline takes of the options.
type config struct {
	clock         Clock
	seed          uint64
	visibilityLag time.Duration // every read's lag (WithVisibilityLag)
	chaos         *chaosConfig  // chaos mode from the start, or nil
}

// hooks are the provider-specific steps of the pipeline.
type hooks struct {
	// writeError answers an error in the provider's dialect.
	writeError func(w http.ResponseWriter, status int, msg string)
	// defaultMessage is the provider's text for a status when a fault gives
	// none (what writeError sends for "").
	defaultMessage func(status int) string
	// authorized reports whether the request carries the right key.
	authorized func(r *http.Request) bool
	// limit, if set, is consulted for every authorized call; it returns false
	// and the Retry-After to send when the call is over the rate limit.
	limit func(r *http.Request) (ok bool, retryAfter time.Duration)
	// pathOK, if set, vets the path before routing; false answers 404.
	pathOK func(r *http.Request) bool
}

// server is the request pipeline shared by both fakes: route lookup (once),
// auth, rate limit, faults and chaos, body limit, call log. Each fake embeds
// one; what the fakes need beyond the public methods are functions of this
// package (handle, addChaosFault, randUint64, resetPipeline), so that they
// are not promoted into the fakes' method sets.
type server struct {
	name   string
	clock  Clock
	seed   uint64
	router *serverRouter
	lag    time.Duration // WithVisibilityLag: every read's lag
	hk     hooks

	mu          sync.Mutex // guards faults, faultSeq, fired, chaos, calls, rng, routes' counters
	faults      []*activeFault
	faultSeq    uint64
	fired       []FiredFault
	chaos       *chaosState
	chaosFaults map[string][]Fault // provider refusals chaos mode may answer, by route
	calls       callLog
	rng         *rand.Rand
}

// newServer returns a pipeline with no routes (handle adds them).
func newServer(name string, cfg config, hk hooks) *server {
	s := &server{
		name:   name,
		clock:  cfg.clock,
		seed:   cfg.seed,
		router: newServerRouter(),
		lag:    cfg.visibilityLag,
		hk:     hk,
		rng:    rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15)),
	}
	if cfg.chaos != nil {
		s.chaos = &chaosState{chaosConfig: *cfg.chaos}
	}
	return s
}

// handle registers h for pattern ("METHOD /path/{id}"); public routes need
// no API key. The handler reads the wildcards with r.PathValue.
func handle(s *server, pattern string, public bool, h http.HandlerFunc) {
	s.router.add(pattern, public, h)
}

// randUint64 draws from the pipeline's seeded source (rewound by
// resetPipeline).
func randUint64(s *server) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Uint64()
}

// Routes lists the served route patterns, sorted; these are the names a
// Fault's Route may take.
func (s *server) Routes() []string { return s.router.names() }

// Calls returns a copy of the call log, oldest first.
func (s *server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls.all()
}

// ResetCalls empties the call log.
func (s *server) ResetCalls() {
	s.mu.Lock()
	s.calls = callLog{}
	s.mu.Unlock()
}

// resetPipeline forgets faults, what fired, the call log and the routes'
// counters, restarts chaos mode from its seed and rewinds the random source.
func resetPipeline(s *server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults, s.fired, s.calls = nil, nil, callLog{}
	for _, r := range s.router.byName {
		r.seen = 0
	}
	if s.chaos != nil {
		s.chaos = &chaosState{chaosConfig: s.chaos.chaosConfig}
	}
	s.rng = rand.New(rand.NewPCG(s.seed, s.seed^0x9e3779b97f4a7c15))
}

// ServeHTTP runs the pipeline: path check, route, auth, rate limit, faults,
// handler.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := Call{Time: s.clock.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery}
	sw := &statusWriter{ResponseWriter: w}
	defer s.logCall(&call, sw) // also after a dropped connection (a panic): status 0
	var rt *serverRoute
	if s.hk.pathOK == nil || s.hk.pathOK(r) {
		rt = s.router.match(r)
	}
	if rt == nil {
		s.hk.writeError(sw, http.StatusNotFound, "")
		return
	}
	call.Route = rt.display
	if !rt.public && !s.hk.authorized(r) {
		s.hk.writeError(sw, http.StatusUnauthorized, "")
		return
	}
	if s.hk.limit != nil {
		if ok, after := s.hk.limit(r); !ok {
			setRetryAfter(sw, after)
			s.hk.writeError(sw, http.StatusTooManyRequests, "")
			return
		}
	}
	if r.Method != http.MethodGet && (r.ContentLength < 0 || r.ContentLength > MaxBodyBytes) {
		r.Body = http.MaxBytesReader(sw, r.Body, MaxBodyBytes) // a known, small length needs no guard
	}
	s.mu.Lock()
	plan := s.planFaults(rt, &call)
	s.mu.Unlock()
	if s.lag > 0 {
		r = withLag(r, s.lag)
	}
	if plan.empty() {
		rt.h(sw, r)
		return
	}
	s.serveFaulty(sw, r, rt, &plan)
}

func (s *server) logCall(call *Call, sw *statusWriter) {
	call.Status = sw.status
	s.mu.Lock()
	s.calls.add(*call)
	s.mu.Unlock()
}

// serveFaulty answers a call that faults apply to: the delay first, then
// the handler (stale when lagging) or the fault's answer.
func (s *server) serveFaulty(w *statusWriter, r *http.Request, rt *serverRoute, p *faultPlan) {
	if p.latency > 0 {
		_ = s.clock.Sleep(context.WithoutCancel(r.Context()), p.latency)
	}
	if p.lag > s.lag {
		r = withLag(r, p.lag)
	}
	if !p.has {
		rt.h(w, r)
		return
	}
	f := &p.answer
	if f.CutAfter > 0 {
		serveCut(w, r, rt.h, f.CutAfter)
		return
	}
	if f.AfterCommit {
		rt.h(&discardWriter{h: http.Header{}}, r)
	}
	if p.reset {
		panic(http.ErrAbortHandler)
	}
	setRetryAfter(w, f.RetryAfter)
	switch {
	case f.EmptyBody:
		setJSONContentType(w)
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(f.Status)
	case f.Status < 300:
		s.hk.writeError(&statusOverride{ResponseWriter: w, status: f.Status}, http.StatusInternalServerError, f.Message)
	default:
		s.hk.writeError(w, f.Status, f.Message)
	}
}

// serveCut runs the handler, then sends its headers with the whole length,
// the first n bytes of its body, and drops the connection.
func serveCut(w http.ResponseWriter, r *http.Request, h http.HandlerFunc, n int) {
	rec := &bufferWriter{h: http.Header{}}
	h(rec, r)
	for k, v := range rec.h {
		w.Header()[k] = v
	}
	body := rec.body
	if n >= len(body) {
		w.WriteHeader(rec.code())
		_, _ = w.Write(body)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.code())
	_, _ = w.Write(body[:n])
	_ = http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// lagKey carries a call's visibility lag in its context.
type lagKey struct{}

func withLag(r *http.Request, d time.Duration) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), lagKey{}, d))
}

// lagOf is how stale the read r is: the fake's WithVisibilityLag or the lag
// a fault gave the call, the longer (0 outside a read the pipeline serves).
func lagOf(r *http.Request) time.Duration {
	d, _ := r.Context().Value(lagKey{}).(time.Duration)
	return d
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
	return decodeBody(r, func(data []byte) error { return json.Unmarshal(data, v) })
}

// decodeBody reads the request body (into a recycled buffer) and decodes it
// with unmarshal, which must not keep the bytes: 413 for a body over
// MaxBodyBytes, 400 for an empty or malformed one.
func decodeBody(r *http.Request, unmarshal func([]byte) error) (status int, msg string) {
	data, bp, status, msg := readBody(r)
	defer putBody(bp, data)
	if status != 0 {
		return status, msg
	}
	if err := unmarshal(data); err != nil {
		return http.StatusBadRequest, "Malformed JSON: " + err.Error()
	}
	return 0, ""
}

// readBody reads the request body into a recycled buffer, which the caller
// gives back with putBody once done with the bytes: 413 for a body over
// MaxBodyBytes, 400 for an empty one.
func readBody(r *http.Request) (data []byte, bp *[]byte, status int, msg string) {
	bp = jsonBufs.Get().(*[]byte)
	buf := bytes.NewBuffer((*bp)[:0])
	_, err := buf.ReadFrom(r.Body)
	data = buf.Bytes()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return data, bp, http.StatusRequestEntityTooLarge, "Request body too large."
		}
		return data, bp, http.StatusBadRequest, "Unable to read request body."
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return data, bp, http.StatusBadRequest, "Request body is empty."
	}
	return data, bp, 0, ""
}

// putBody recycles a buffer readBody gave (unless it grew too large).
func putBody(bp *[]byte, data []byte) {
	if cap(data) <= 1<<20 {
		*bp = data[:0]
	}
	jsonBufs.Put(bp)
}

// writeJSON answers status with v encoded as JSON (and a newline, as
// json.Encoder writes it).
func writeJSON(w http.ResponseWriter, status int, v any) {
	if a, ok := v.(jsonAppender); ok {
		writeAppended(w, status, a.appendJSON)
		return
	}
	setJSONContentType(w)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Client returns an *http.Client whose transport calls the fake in memory, no
// sockets involved: any URL host reaches the fake, so a client left on its
// real default base URL works unchanged. Safe inside testing/synctest.
func (s *server) Client() *http.Client {
	return &http.Client{Transport: &memTransport{h: s}}
}
