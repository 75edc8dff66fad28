package sim

import (
	"fmt"
	"time"
)

// AnyRoute as a Fault's Route matches every served route (an outage).
const AnyRoute = "*"

// Fault is an injected failure. Faults are off by default, deterministic
// (count- or time-based) and answered in the provider's own error dialect.
type Fault struct {
	// Route is the http.ServeMux pattern of a served route, as listed by
	// Routes, for example "POST /v2/instances/{id}/vpcs/attach" or
	// "DELETE /api/teams/{team}/virtual_machines/{vm}/"; AnyRoute matches all.
	Route string
	// Times is how many matching calls fail; 0 means every call until the
	// fault expires or is cleared.
	Times int
	// Status is the HTTP status answered (default 500).
	Status int
	// Message is the error message, written in the provider's error body.
	Message string
	// AfterCommit lets the call take effect first and then answers the fault,
	// like a create that succeeded but reported 500.
	AfterCommit bool
	// Reset drops the connection instead of answering (a connection reset).
	// With a non-zero Status as well, matching calls alternate between a reset
	// and the status, starting with the reset.
	Reset bool
	// RetryAfter, if positive, is sent as the Retry-After header (whole
	// seconds, rounded up).
	RetryAfter time.Duration
	// Duration, if positive, limits the fault to this much cloud time from
	// Inject.
	Duration time.Duration
}

type activeFault struct {
	Fault
	used  int
	until time.Time // zero: no time limit
}

func (f *activeFault) expired(now time.Time) bool {
	if f.Times > 0 && f.used >= f.Times {
		return true
	}
	return !f.until.IsZero() && !now.Before(f.until)
}

// Inject arms a fault. It fails if the Route names no served route.
func (s *server) Inject(f Fault) error {
	if f.Route != AnyRoute && !s.routes[f.Route] {
		return fmt.Errorf("sim: %s serves no route %q (see Routes)", s.name, f.Route)
	}
	if f.Times < 0 {
		return fmt.Errorf("sim: fault Times must be 0 or more, got %d", f.Times)
	}
	if f.Status == 0 {
		f.Status = 500
	}
	if f.Status < 400 || f.Status > 599 {
		return fmt.Errorf("sim: fault Status must be 4xx or 5xx, got %d", f.Status)
	}
	af := &activeFault{Fault: f}
	if f.Duration > 0 {
		af.until = s.clock.Now().Add(f.Duration)
	}
	s.mu.Lock()
	s.faults = append(s.faults, af)
	s.mu.Unlock()
	return nil
}

// ClearFaults disarms every injected fault.
func (s *server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// takeFault returns the first armed fault matching route and counts the call
// against it. reset reports whether this call should drop the connection.
func (s *server) takeFault(route string) (f *Fault, reset bool) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	live := s.faults[:0]
	var hit *activeFault
	for _, af := range s.faults {
		if af.expired(now) {
			continue
		}
		live = append(live, af)
		if hit == nil && (af.Route == AnyRoute || af.Route == route) {
			hit = af
		}
	}
	s.faults = live
	if hit == nil {
		return nil, false
	}
	hit.used++
	reset = hit.Reset && (hit.Status == 0 || hit.used%2 == 1)
	cp := hit.Fault
	return &cp, reset
}
