// Package steppedclock is a clock for tests and benchmarks that drive the
// Manager and the sims on cloud time moved by hand: Sleep returns at once
// (a sim's blocking call takes no time) and Advance moves the time.
package steppedclock

import (
	"context"
	"sync"
	"time"
)

// Clock is a stepped clock; it satisfies fleet.Clock and sim.Clock. Safe
// for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock standing at start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep returns at once: ctx.Err(), whatever d is.
func (c *Clock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
