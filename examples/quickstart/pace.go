package main

import "context"

// pacer times the driver's passes: the next one is due at the Manager's
// NextPass (a release deadline, a retry, a timeout), at most -interval
// after the last, or at once when a job recorded an intent (Apply,
// Acquire, GiveBack, Delete). A fixed -interval missed releases whose last
// safe moment fell between two passes (issue 17). Jobs wait for the passes
// that change the records (afterPass) instead of polling them.
type pacer struct {
	wake chan struct{} // a job recorded an intent: pass now
	// passed is closed after each pass and replaced (under the driver's mu).
	passed chan struct{}
}

func newPacer() pacer {
	return pacer{wake: make(chan struct{}, 1), passed: make(chan struct{})}
}

// poke asks for a pass now: a job recorded an intent.
func (d *driver) poke() {
	select {
	case d.pace.wake <- struct{}{}:
	default:
	}
}

// afterPass returns a channel closed when the next pass has been made.
func (d *driver) afterPass() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pace.passed
}

// passDone tells the jobs waiting in afterPass that a pass was made.
func (d *driver) passDone() {
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.pace.passed)
	d.pace.passed = make(chan struct{})
}

// untilNextPass waits, in cloud time, until the Manager's next pass is due
// (NextPass, at most -interval from now) or a job pokes; it returns ctx's
// error when ctx ends first.
func (d *driver) untilNextPass(ctx context.Context) error {
	wait := min(d.cfg.interval, d.m.NextPass().Sub(d.w.clock.Now()))
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-d.pace.wake:
			cancel()
		case <-sctx.Done():
		}
	}()
	if wait > 0 {
		_ = d.w.clock.Sleep(sctx, wait)
	}
	return ctx.Err()
}
