package core

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Clock is the single source of time of a fake: every state timeline, rate
// limit, billing entry and blocking call reads it.
type Clock interface {
	// Now returns the current cloud time.
	Now() time.Time
	// Sleep waits for d of cloud time, or until ctx ends (returning ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock returns the process clock (time.Now and timers). Inside a
// testing/synctest bubble this is the bubble's fake clock.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MaxSpeed is the fastest ScaledClock CheckSpeed accepts: one cloud hour in
// 36 ms of wall time. The clock stops 290 years of cloud time after its
// start (time.Duration's range): about 25 wall hours at this speed.
const MaxSpeed = 1e5

// CheckSpeed returns an error unless speed is a number in (0, MaxSpeed]
// (NaN and infinities are not).
func CheckSpeed(speed float64) error {
	if !(speed > 0) || speed > MaxSpeed {
		return fmt.Errorf("speed must be positive, at most %g; got %v", float64(MaxSpeed), speed)
	}
	return nil
}

// ScaledClock returns a clock that runs speed times faster than the process
// clock, starting at the current time: with speed 60, one cloud hour passes in
// one wall minute. A speed CheckSpeed refuses is taken as 1.
func ScaledClock(speed float64) Clock {
	if CheckSpeed(speed) != nil {
		speed = 1
	}
	now := time.Now()
	return &scaledClock{start: now, base: now, speed: speed}
}

type scaledClock struct {
	start time.Time // wall time at creation
	base  time.Time // cloud time at creation
	speed float64
}

// Now is the cloud time: it saturates (stops) some 290 years of cloud time
// after the start, rather than overflowing back into the past (25 wall
// hours at MaxSpeed).
func (c *scaledClock) Now() time.Time {
	cloud := float64(time.Since(c.start)) * c.speed
	if cloud >= math.MaxInt64 {
		return c.base.Add(math.MaxInt64)
	}
	return c.base.Add(time.Duration(cloud))
}

func (c *scaledClock) Sleep(ctx context.Context, d time.Duration) error {
	return realClock{}.Sleep(ctx, time.Duration(float64(d)/c.speed))
}
