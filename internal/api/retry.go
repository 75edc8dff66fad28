package api

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	retry "github.com/avast/retry-go/v4"
)

// RetryPolicy bounds the retries of idempotent calls: 429 (honouring
// Retry-After) and transient failures (502, 503, 504, transport errors), with
// exponential backoff from MinDelay capped at MaxDelay and full jitter, all
// inside the call's ctx.
type RetryPolicy struct {
	// Attempts is the total number of attempts (default 5; 1 disables retries).
	Attempts uint
	// MinDelay is the first backoff (default 500 ms).
	MinDelay time.Duration
	// MaxDelay caps each backoff (default 30 s). A longer Retry-After is
	// still honoured.
	MaxDelay time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts == 0 {
		p.Attempts = 5
	}
	if p.MinDelay <= 0 {
		p.MinDelay = 500 * time.Millisecond
	}
	if p.MaxDelay < p.MinDelay {
		p.MaxDelay = 30 * time.Second
		if p.MaxDelay < p.MinDelay {
			p.MaxDelay = p.MinDelay
		}
	}
	return p
}

// retryAfterer is implemented by typed API errors that carry Retry-After.
type retryAfterer interface{ RetryAfterDuration() time.Duration }

// statuser is implemented by typed API errors that carry an HTTP status.
type statuser interface{ HTTPStatus() int }

// Transient reports whether err is worth retrying for an idempotent call.
func Transient(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return true
	}
	var s statuser
	if errors.As(err, &s) {
		switch s.HTTPStatus() {
		case http.StatusTooManyRequests, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	}
	return false
}

func (p RetryPolicy) delay(n uint, err error) time.Duration {
	var ra retryAfterer
	if errors.As(err, &ra) {
		if d := ra.RetryAfterDuration(); d > 0 {
			return d
		}
	}
	if n > 0 {
		n-- // retry-go counts the first retry as 1
	}
	backoff := p.MinDelay << min(n, 20)
	if backoff <= 0 || backoff > p.MaxDelay {
		backoff = p.MaxDelay
	}
	// Full jitter in [backoff/2, backoff].
	return backoff/2 + rand.N(backoff/2+1)
}

// run calls fn until it succeeds, fails for good, or ctx ends, sleeping the
// backoff on clock. It returns fn's last error, or ctx's error when ctx ended
// first (Do then names the call and keeps the last error visible).
func (p RetryPolicy) run(ctx context.Context, clock Clock, fn func() error) error {
	return retry.Do(fn,
		retry.Context(ctx),
		retry.WithTimer(clockTimer{ctx: ctx, clock: clock}),
		retry.Attempts(p.Attempts),
		retry.RetryIf(Transient),
		retry.DelayType(func(n uint, err error, _ *retry.Config) time.Duration { return p.delay(n, err) }),
		retry.MaxDelay(0),
		retry.LastErrorOnly(true),
	)
}
