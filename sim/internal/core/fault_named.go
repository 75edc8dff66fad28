package core

import (
	"fmt"
	"net/http"
	"time"
)

// RateLimitBurst makes every call answer 429 in the provider's dialect, with
// Retry-After (whole seconds, at least 1), for d of cloud time from now, as
// when the API throttles an account in bursts. d must be positive.
func (s *Server) RateLimitBurst(d, retryAfter time.Duration) error {
	if d <= 0 {
		return errNonPositive("RateLimitBurst", d)
	}
	return s.Inject(Fault{Route: AnyRoute, Status: http.StatusTooManyRequests,
		RetryAfter: max(retryAfter, time.Second), Duration: d})
}

// SlowAnswers delays every call by a seeded duration from minDelay to
// maxDelay of cloud time, for d of cloud time from now (0: until
// ClearFaults). The calls still take effect if their client gives up.
func (s *Server) SlowAnswers(minDelay, maxDelay, d time.Duration) error {
	return s.Inject(Fault{Route: AnyRoute, Latency: minDelay, LatencyMax: maxDelay, Duration: d})
}

// StaleReads makes every read (GET) miss the servers created less than lag
// ago, for d of cloud time from now (0: until ClearFaults): lists leave them
// out and their own GET answers 404, as an eventually consistent API does
// (see WithVisibilityLag for a lag from the start).
func (s *Server) StaleReads(lag, d time.Duration) error {
	if lag <= 0 {
		return errNonPositive("StaleReads", lag)
	}
	return s.Inject(Fault{Route: AnyRoute, VisibilityLag: lag, Duration: d})
}

func errNonPositive(what string, d time.Duration) error {
	return fmt.Errorf("sim: %s wants a positive duration, got %v", what, d)
}
