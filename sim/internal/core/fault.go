package core

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// AnyRoute as a Fault's Route matches every served route (an outage).
const AnyRoute = "*"

// ErrUnknownRoute is wrapped by the error Inject returns for a Route the fake
// does not serve; Routes lists the ones it does.
var ErrUnknownRoute = errors.New("no such route")

// ErrNoServer is wrapped by the error of an out-of-band operation (halt,
// destroy, relabel) on a server the fake does not have, or no longer has.
var ErrNoServer = errors.New("no such server")

// Fault is an injected failure. Faults are off by default, deterministic
// (count- or time-based, and seeded where random) and answered in the
// provider's own error dialect. A fault has up to three effects on a call it
// matches: a delay (Latency), stale reads (VisibilityLag), and an answer
// that replaces the handler's (Status, Reset, EmptyBody or CutAfter). Every
// armed fault that matches a call adds its delay and its lag; the first one
// with an answer gives the answer, and later ones with an answer skip the
// call (they do not count it against their Times).
type Fault struct {
	// Route is a served route's pattern, as listed by Routes, for example
	// "POST /v2/instances/{id}/vpcs/attach" or
	// "DELETE /api/teams/{team}/virtual_machines/{vm}/"; AnyRoute matches all.
	Route string
	// Times is how many calls the fault applies to; 0 means every matching
	// call until the fault expires or is cleared.
	Times int
	// Probability, if positive (at most 1), makes the fault apply to each
	// matching call with this probability, drawn from the fake's seed and the
	// call's position among the route's calls, so a replay with the same seed
	// and the same calls fires on the same calls. Times then counts the calls
	// it applied to.
	Probability float64
	// Status is the HTTP status answered. A 4xx or 5xx answers the provider's
	// error body with Message; a 2xx answers the provider's error body for a
	// 500 with Message under that 2xx status (a success status carrying an
	// error), or, with EmptyBody, nothing. It defaults to 500 for a fault with
	// no other effect, and to 200 with EmptyBody.
	Status int
	// Message is the error message, written in the provider's error body
	// ("" takes the provider's usual text for the status).
	Message string
	// AfterCommit lets the call take effect first and then answers the fault,
	// like a create that succeeded but reported 500.
	AfterCommit bool
	// Reset drops the connection instead of answering (the client sees a
	// connection reset). With a non-zero Status as well, the calls it applies
	// to alternate between a reset and the status, starting with the reset.
	Reset bool
	// EmptyBody answers Status (default 200) with an empty body.
	EmptyBody bool
	// CutAfter, if positive, lets the call take effect and cuts the answer's
	// body after this many bytes: the headers announce the whole length, then
	// the connection closes (the client reads an unexpected EOF). It cannot
	// be combined with Status, Reset or EmptyBody.
	CutAfter int
	// RetryAfter, if positive, is sent as the Retry-After header (whole
	// seconds, rounded up).
	RetryAfter time.Duration
	// Latency, if positive, delays the call by this much cloud time before
	// the fake handles it (a slow answer; the call still takes effect if the
	// client gives up meanwhile).
	Latency time.Duration
	// LatencyMax, if greater than Latency, makes the delay a seeded draw from
	// Latency to LatencyMax.
	LatencyMax time.Duration
	// VisibilityLag, if positive, makes the reads (GET routes) it applies to
	// stale: a server created less than this long ago is missing from lists
	// and its own GET answers 404, as an eventually consistent API does just
	// after a create. Other routes ignore it.
	VisibilityLag time.Duration
	// Duration, if positive, limits the fault to this much cloud time from
	// Inject.
	Duration time.Duration
}

// hasAnswer reports whether the fault replaces the handler's answer.
func (f *Fault) hasAnswer() bool {
	return f.Status != 0 || f.Reset || f.EmptyBody || f.CutAfter > 0
}

// normalize validates f against the served routes and fills its defaults.
func (f *Fault) normalize(fake string, routes *serverRouter) error {
	if f.Route != AnyRoute && routes.byName[f.Route] == nil {
		return fmt.Errorf("sim: %s serves no route %q (Routes lists them): %w", fake, f.Route, ErrUnknownRoute)
	}
	switch {
	case f.Times < 0:
		return fmt.Errorf("sim: fault Times must be 0 or more, got %d", f.Times)
	case !(f.Probability >= 0 && f.Probability <= 1): // NaN too
		return fmt.Errorf("sim: fault Probability must be from 0 to 1, got %v", f.Probability)
	case f.CutAfter < 0:
		return fmt.Errorf("sim: fault CutAfter must be 0 or more, got %d", f.CutAfter)
	case f.Latency < 0 || f.LatencyMax < 0 || f.VisibilityLag < 0 || f.RetryAfter < 0 || f.Duration < 0:
		return errors.New("sim: fault durations must not be negative")
	case f.LatencyMax > 0 && f.LatencyMax < f.Latency:
		return fmt.Errorf("sim: fault LatencyMax %v is below Latency %v", f.LatencyMax, f.Latency)
	case f.CutAfter > 0 && (f.Status != 0 || f.Reset || f.EmptyBody):
		return errors.New("sim: fault CutAfter cannot be combined with Status, Reset or EmptyBody")
	}
	if f.Status == 0 && f.EmptyBody {
		f.Status = http.StatusOK
	}
	if !f.hasAnswer() && f.Latency == 0 && f.LatencyMax == 0 && f.VisibilityLag == 0 {
		f.Status = http.StatusInternalServerError
	}
	if f.Status != 0 && !(f.Status >= 200 && f.Status <= 299) && !(f.Status >= 400 && f.Status <= 599) {
		return fmt.Errorf("sim: fault Status must be 2xx, 4xx or 5xx, got %d", f.Status)
	}
	return nil
}

// FaultKind names what a fault did to a call.
type FaultKind string

// The kinds of FiredFault.
const (
	// FaultStatus: the call was answered with an injected status and error
	// body (before it took effect, or after with AfterCommit).
	FaultStatus FaultKind = "status"
	// FaultReset: the connection was dropped.
	FaultReset FaultKind = "reset"
	// FaultEmptyBody: a status (usually 200) with an empty body.
	FaultEmptyBody FaultKind = "empty_body"
	// FaultErrorBody: a 2xx status carrying an error body.
	FaultErrorBody FaultKind = "error_body"
	// FaultCut: the answer's body was cut short.
	FaultCut FaultKind = "cut"
	// FaultLatency: the call was delayed.
	FaultLatency FaultKind = "latency"
	// FaultLag: the read was stale (recent servers hidden).
	FaultLag FaultKind = "lag"
	// FaultRateLimit: a 429 of a chaos burst.
	FaultRateLimit FaultKind = "rate_limit"
)

// FiredFault is one effect a fault had on one call, for inspection.
type FiredFault struct {
	Time    time.Time     // cloud time the call arrived
	Method  string        // the call's method
	Route   string        // the served route pattern
	Path    string        // the request path
	Kind    FaultKind     // what the fault did
	Status  int           // the status answered (0 for a reset, a delay or a lag)
	Message string        // the error message sent (the provider's usual text when the fault gave none)
	Delay   time.Duration // FaultLatency: the delay; FaultLag: the visibility lag
	Commit  bool          // the call took effect before the fault answered
	Chaos   bool          // fired by chaos mode rather than an injected Fault
}

// activeFault is an armed fault and its use count.
type activeFault struct {
	Fault
	id    uint64 // position among the faults armed so far: salts its draws
	used  int
	until time.Time // zero: no time limit
}

func (f *activeFault) expired(now time.Time) bool {
	if f.Times > 0 && f.used >= f.Times {
		return true
	}
	return !f.until.IsZero() && !now.Before(f.until)
}

// Inject arms a fault. It fails if the Route names no served route (the
// error wraps ErrUnknownRoute) or a field is out of range.
func (s *Server) Inject(f Fault) error {
	if err := f.normalize(s.name, s.router); err != nil {
		return err
	}
	s.mu.Lock()
	s.faultSeq++
	af := &activeFault{Fault: f, id: s.faultSeq}
	if f.Duration > 0 {
		af.until = s.clock.Now().Add(f.Duration)
	}
	s.faults = append(s.faults, af)
	s.mu.Unlock()
	if f.Reset {
		s.resets.Store(true)
	}
	return nil
}

// ClearFaults disarms every injected fault (chaos mode stays on; see
// StopChaos). What fired stays in Faults.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// ArmedFaults returns the injected faults still armed, in the order they
// were armed, with their defaults filled in.
func (s *Server) ArmedFaults() []Fault {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Fault
	for _, af := range s.faults {
		if !af.expired(now) {
			out = append(out, af.Fault)
		}
	}
	return out
}

// Faults returns every fault effect that fired so far, oldest first:
// injected faults and chaos mode alike (Reset empties it).
func (s *Server) Faults() []FiredFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FiredFault(nil), s.fired...)
}
