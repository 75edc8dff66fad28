package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MaxBodyBytes is the largest request body the fakes read (1 MiB); a larger
// one is refused in the provider's dialect with 413.
const MaxBodyBytes = 1 << 20

// Config is what the pipeline takes of the options.
type Config struct {
	Clock         Clock
	Seed          uint64
	VisibilityLag time.Duration // every read's lag (WithVisibilityLag)
	Chaos         *ChaosConfig  // chaos mode from the start, or nil
}

// Hooks are the provider-specific steps of the pipeline.
type Hooks struct {
	// WriteError answers an error in the provider's dialect.
	WriteError func(w http.ResponseWriter, status int, msg string)
	// DefaultMessage is the provider's text for a status when a fault gives
	// none (what writeError sends for "").
	DefaultMessage func(status int) string
	// Authorized reports whether the request carries the right key.
	Authorized func(r *http.Request) bool
	// Limit, if set, is consulted for every authorized call; it returns false
	// and the Retry-After to send when the call is over the rate limit.
	Limit func(r *http.Request) (ok bool, retryAfter time.Duration)
	// PathOK, if set, vets the path before routing; false answers 404.
	PathOK func(r *http.Request) bool
}

// Server is the request pipeline shared by both fakes: route lookup (once),
// auth, rate limit, faults and chaos, body limit, call log. Each fake embeds
// one; what the fakes need beyond the public methods are functions of this
// package (Handle, AddChaosFault, RandUint64, ResetPipeline), so that they
// are not promoted into the fakes' method sets.
type Server struct {
	name   string
	clock  Clock
	seed   uint64
	router *serverRouter
	lag    time.Duration // WithVisibilityLag: every read's lag
	hk     Hooks

	resets      atomic.Bool // a reset fault or chaos with resets was ever armed: answers close their connection
	mu          sync.Mutex  // guards faults, faultSeq, fired, chaos, calls, rng, routes' counters
	faults      []*activeFault
	faultSeq    uint64
	fired       []FiredFault
	chaos       *chaosState
	chaosFaults map[string][]Fault // provider refusals chaos mode may answer, by route
	calls       callLog
	rng         *rand.Rand
}

// NewServer returns a pipeline with no routes (handle adds them).
func NewServer(name string, cfg Config, hk Hooks) *Server {
	s := &Server{
		name:   name,
		clock:  cfg.Clock,
		seed:   cfg.Seed,
		router: newServerRouter(),
		lag:    cfg.VisibilityLag,
		hk:     hk,
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}
	if cfg.Chaos != nil {
		s.chaos = &chaosState{ChaosConfig: *cfg.Chaos}
		s.resets.Store(cfg.Chaos.Profile.Reset > 0)
	}
	return s
}

// Handle registers h for pattern ("METHOD /path/{id}"); public routes need
// no API key. The handler reads the wildcards with r.PathValue.
func Handle(s *Server, pattern string, public bool, h http.HandlerFunc) {
	s.router.add(pattern, public, h)
}

// RandUint64 draws from the pipeline's seeded source (rewound by
// ResetPipeline).
func RandUint64(s *Server) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Uint64()
}

// RandFill fills dst with draws from the pipeline's seeded source, under
// one lock: the same numbers, in the same order, as len(dst) calls of
// RandUint64.
func RandFill(s *Server, dst []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range dst {
		dst[i] = s.rng.Uint64()
	}
}

// Routes lists the served route patterns, sorted; these are the names a
// Fault's Route may take.
func (s *Server) Routes() []string { return s.router.names() }

// Calls returns a copy of the call log, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls.all()
}

// ResetCalls empties the call log.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	s.calls = callLog{}
	s.mu.Unlock()
}

// ResetPipeline forgets faults, what fired, the call log and the routes'
// counters, restarts chaos mode from its seed and rewinds the random source.
func ResetPipeline(s *Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults, s.fired, s.calls = nil, nil, callLog{}
	for _, r := range s.router.byName {
		r.seen = 0
	}
	if s.chaos != nil {
		s.chaos = &chaosState{ChaosConfig: s.chaos.ChaosConfig}
	}
	s.rng = rand.New(rand.NewPCG(s.seed, s.seed^0x9e3779b97f4a7c15))
}

// ServeHTTP runs the pipeline: path check, route, auth, rate limit, faults,
// handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := Call{Time: s.clock.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery}
	sw := &statusWriter{ResponseWriter: w}
	if s.resets.Load() {
		// Once a reset may be drawn, no connection is reused: over TCP, Go's
		// client sends an idempotent request again, unseen, when a reused
		// connection drops before the answer, which would shift every later
		// draw away from what the same calls draw in process.
		sw.Header().Set("Connection", "close")
	}
	defer s.logCall(&call, sw) // also after a dropped connection (a panic): status 0
	var rt *serverRoute
	if s.hk.PathOK == nil || s.hk.PathOK(r) {
		rt = s.router.match(r)
	}
	if rt == nil {
		s.hk.WriteError(sw, http.StatusNotFound, "")
		return
	}
	call.Route = rt.display
	if !rt.public && !s.hk.Authorized(r) {
		s.hk.WriteError(sw, http.StatusUnauthorized, "")
		return
	}
	if s.hk.Limit != nil {
		if ok, after := s.hk.Limit(r); !ok {
			setRetryAfter(sw, after)
			s.hk.WriteError(sw, http.StatusTooManyRequests, "")
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

func (s *Server) logCall(call *Call, sw *statusWriter) {
	call.Status = sw.status
	s.mu.Lock()
	s.calls.add(*call)
	s.mu.Unlock()
}

// serveFaulty answers a call that faults apply to: the delay first, then
// the handler (stale when lagging) or the fault's answer.
func (s *Server) serveFaulty(w *statusWriter, r *http.Request, rt *serverRoute, p *faultPlan) {
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
		s.hk.WriteError(&statusOverride{ResponseWriter: w, status: f.Status}, http.StatusInternalServerError, f.Message)
	default:
		s.hk.WriteError(w, f.Status, f.Message)
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

// LagOf is how stale the read r is: the fake's WithVisibilityLag or the lag
// a fault gave the call, the longer (0 outside a read the pipeline serves).
func LagOf(r *http.Request) time.Duration {
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

// DecodeJSON reads a JSON request body into v. It reports a body over
// MaxBodyBytes as 413 and anything malformed as 400, with a message.
func DecodeJSON(r *http.Request, v any) (status int, msg string) {
	return decodeBody(r, func(data []byte) error { return json.Unmarshal(data, v) })
}

// decodeBody reads the request body (into a recycled buffer) and decodes it
// with unmarshal, which must not keep the bytes: 413 for a body over
// MaxBodyBytes, 400 for an empty or malformed one.
func decodeBody(r *http.Request, unmarshal func([]byte) error) (status int, msg string) {
	data, bp, status, msg := ReadBody(r)
	defer PutBody(bp, data)
	if status != 0 {
		return status, msg
	}
	if err := unmarshal(data); err != nil {
		return http.StatusBadRequest, "Malformed JSON: " + err.Error()
	}
	return 0, ""
}

// ReadBody reads the request body into a recycled buffer, which the caller
// gives back with putBody once done with the bytes: 413 for a body over
// MaxBodyBytes, 400 for an empty one.
func ReadBody(r *http.Request) (data []byte, bp *[]byte, status int, msg string) {
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

// PutBody recycles a buffer readBody gave (unless it grew too large).
func PutBody(bp *[]byte, data []byte) {
	if cap(data) <= 1<<20 {
		*bp = data[:0]
	}
	jsonBufs.Put(bp)
}

// WriteJSON answers status with v encoded as JSON (and a newline, as
// json.Encoder writes it).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	if a, ok := v.(JSONAppender); ok {
		WriteAppended(w, status, a.AppendJSON)
		return
	}
	setJSONContentType(w)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Client returns an *http.Client whose transport calls the fake in memory, no
// sockets involved: any URL host reaches the fake, so a client left on its
// real default base URL works unchanged. Safe inside testing/synctest.
func (s *Server) Client() *http.Client {
	return MemClient(s)
}
