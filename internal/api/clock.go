package api

import (
	"context"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// Clock is the source of time of a Client: the rate limiter's waits, the
// Retry-After deadlines and the retry backoff are read and slept on it. It
// is fleet.Clock (the same method set as sim.Clock), so a simulator's
// sped-up clock (or a test's) can drive the clients as it drives the Manager.
type Clock = fleet.Clock

// RealClock returns the process clock (time.Now and timers); inside a
// testing/synctest bubble that is the bubble's fake clock.
func RealClock() Clock { return fleet.RealClock() }

// clockTimer adapts a Clock to retry-go's Timer. Each After starts one
// goroutine that ends when d has passed on the clock or ctx ends, whichever
// comes first (the call's ctx: retry-go stops waiting then too).
type clockTimer struct {
	ctx   context.Context
	clock Clock
}

func (t clockTimer) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		if t.clock.Sleep(t.ctx, d) == nil {
			ch <- t.clock.Now()
		}
	}()
	return ch
}
