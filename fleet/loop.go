package fleet

import (
	"context"
	"errors"
	"time"
)

// maxRounds bounds the rounds of one Reconcile (a pass once every answer
// came in): list, act on what was seen, act on the answers (attach after
// create, confirm after delete), and a few more for offers tried one after
// another. The passes it makes at due times while it waits are not counted.
const maxRounds = 12

// Reconcile runs the loop until what is due now is done: it takes the
// recorded intents, lists the providers that are due, acts (adopt, time
// out, start agents, release, create, attach and delete VPCs) and waits for
// the answers of its calls (agent starts go on in the background), up to
// Policy.CreateTimeout for a slow create. While it waits, nothing else
// waits behind it: whenever something falls due (NextPass: a release
// deadline, a retry, a timeout) or an intent is recorded, it makes a pass
// at once, as Run would, and waits for that pass's calls too — a slow
// create or a hanging provider delays no release. A call still under way
// once the longest call deadline (Policy.CreateTimeout, Policy.CallTimeout)
// has passed since the last pass that waited for all answers is left to
// the next Reconcile, which applies its answer. Errors of single calls
// become events and are retried later; the returned error is a store
// failure, an ended ctx, ErrClosed, or a replica's own failure (a
// *ReplicaIDInUseError: another live process runs with its id). While ctx is cancelled no new call
// starts; calls under way finish under their own deadlines.
//
// A caller that drives the Manager with Reconcile instead of Run calls it
// again by NextPass (and at once after recording an intent): release
// deadlines, retries and timeouts fall due between passes at any moment,
// so a fixed pause misses them — one equal to Config.Interval too, since
// Interval only bounds NextPass (a release due a second after a pass would
// wait almost a whole tick, and may buy another billing unit).
func (m *Manager) Reconcile(ctx context.Context) error {
	if err := m.acquire(ctx); err != nil {
		return err
	}
	defer m.release()
	bound := max(m.pol.CreateTimeout, m.pol.CallTimeout, catalogFetchTimeout) + boundarySlack
	for rounds := 0; ; {
		// A round: a pass after every answer came in (or the first one).
		n := m.step(ctx)
		rounds++
		if ctx.Err() != nil {
			break
		}
		if n == 0 && m.awaitedNow() == 0 {
			break
		}
		// Wait for every answer, making a pass whenever something falls
		// due or an intent comes meanwhile.
		end := m.clock.Now().Add(bound)
		wake, err := m.awaitOrDue(ctx, end)
		for err == nil && wake == wakeDue {
			m.step(ctx)
			wake, err = m.awaitOrDue(ctx, end)
		}
		if errors.Is(err, ErrClosed) {
			return ErrClosed // Close overtook it: what was due may not be carried out (tester AT)
		}
		if err != nil || wake != wakeAnswered || rounds >= maxRounds {
			break
		}
	}
	m.mu.Lock()
	m.drainResults(m.clock.Now())
	m.mu.Unlock()
	return errors.Join(m.flush(ctx), ctx.Err(), m.replicaErr())
}

// Run is the loop: it steps whenever an intent is recorded or an answer
// comes back, and at least every Config.Interval, until ctx ends (returning
// ctx.Err()) or the Manager is closed (ErrClosed). It never waits for a
// provider call: a slow create or a hanging provider delays nothing else.
// A replica (Config.ReplicaID) whose id another live process holds returns
// a *ReplicaIDInUseError (see there).
func (m *Manager) Run(ctx context.Context) error {
	m.forgetConflict()
	for {
		if err := m.acquire(ctx); err != nil {
			return err
		}
		m.step(ctx)
		wait := m.untilNext()
		m.release()
		if err := m.replicaErr(); err != nil {
			return err
		}
		if err := m.sleepOrWake(ctx, wait); err != nil {
			if m.closed.Load() {
				return ErrClosed
			}
			return err
		}
	}
}

// acquire takes the loop's token.
func (m *Manager) acquire(ctx context.Context) error {
	if m.closed.Load() {
		return ErrClosed
	}
	select {
	case m.pass <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-m.done:
		return ErrClosed
	}
	if m.closed.Load() {
		<-m.pass
		return ErrClosed
	}
	return nil
}

func (m *Manager) release() { <-m.pass }

// awaitedNow applies the answers that came in and returns how many
// awaited tasks are still under way. It takes m.mu.
func (m *Manager) awaitedNow() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drainResults(m.clock.Now())
	return m.awaited()
}

// What ended Reconcile's wait (awaitOrDue).
const (
	wakeAnswered = iota // every awaited task answered
	wakeDue             // something fell due (NextPass), or an intent was recorded
	wakeLimit           // the wait's limit passed with tasks still under way
	wakeTimer           // (waitUntil) the time waited for came
)

// awaitOrDue waits, applying answers as they come, until every awaited
// task has answered, something falls due (nextDueAt, at least a second
// away, as Run sleeps) or an intent is recorded, or limit passes, all by
// the Manager's clock. A clock whose Sleep returns before its Now reaches
// the time asked (a stepped clock moved by hand) wakes nothing: then only
// answers and intents end the wait.
func (m *Manager) awaitOrDue(ctx context.Context, limit time.Time) (int, error) {
	for {
		signal := m.resultSignal()
		if m.awaitedNow() == 0 {
			return wakeAnswered, nil
		}
		now, next := m.nextDueAt()
		if !now.Before(limit) {
			return wakeLimit, nil
		}
		next = minTime(maxTime(next, now.Add(time.Second)), limit)
		wake, err := m.waitUntil(ctx, next, signal)
		switch {
		case err != nil:
			return 0, err
		case wake == wakeTimer && !next.Before(limit):
			return wakeLimit, nil
		case wake != wakeAnswered:
			return wakeDue, nil
		}
	}
}

// waitUntil waits until signal (wakeAnswered: an answer came, perhaps not
// the last), an intent (wakeDue), or the Manager's clock reaching at
// (wakeTimer), or ctx or the Manager ends.
func (m *Manager) waitUntil(ctx context.Context, at time.Time, signal <-chan struct{}) (int, error) {
	sctx, cancel := context.WithCancel(ctx)
	slept := make(chan struct{})
	go func() {
		err := m.clock.Sleep(sctx, at.Sub(m.clock.Now()))
		if err == nil && !m.clock.Now().Before(at) {
			close(slept)
			return
		}
		<-sctx.Done() // woken early, or a clock that does not move by itself
	}()
	defer cancel()
	select {
	case <-signal:
		return wakeAnswered, nil
	case <-m.tasks.wake:
		return wakeDue, nil
	case <-slept:
		return wakeTimer, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-m.done:
		return 0, ErrClosed
	}
}

// sleepOrWake waits for d of the Manager's clock, or until woken.
func (m *Manager) sleepOrWake(ctx context.Context, d time.Duration) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	woken := make(chan struct{})
	signal := m.resultSignal()
	go func() {
		defer close(woken)
		select {
		case <-signal:
			cancel()
		case <-m.tasks.wake:
			cancel()
		case <-m.done:
			cancel()
		case <-sctx.Done():
		}
	}()
	err := m.clock.Sleep(sctx, d)
	cancel()
	<-woken
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if m.closed.Load() {
		return ErrClosed
	}
	_ = err // woken early: step again
	return nil
}

// step is one turn of the loop: take intents and answers, then start what
// is due. It returns how many awaited tasks it started. The loop's token
// is held.
func (m *Manager) step(ctx context.Context) int {
	m.mu.Lock()
	now := m.clock.Now()
	before := m.started()
	m.applyIntents(now)
	m.drainResults(now)
	m.expireLeases(now)
	if ctx.Err() == nil {
		m.syncLeases(now)
		m.writeVoids(now)
		m.listDue(now)
		m.claimOrphans(now)
		m.checkDeadlines(now)
		m.releaseIdle(now)
		m.startAgents(now)
		m.checkAgents(now)
		m.fixLabels(now)
		m.reclaimForGrowth(now)
		m.launchReleases(now)
		m.reconcileVPCs(now)
		m.collectOrphanVPCs(now)
		m.retryKeys(now)
	}
	m.finishFleets(now)
	m.prune(now)
	var creates []*InstanceRecord
	if ctx.Err() == nil {
		creates = m.planCreates(ctx, now)
	}
	m.mu.Unlock()
	// Every create is in the Store before its call.
	err := m.flush(ctx)
	m.mu.Lock()
	m.launchCreates(ctx, creates, err)
	m.launchVPCCreates(ctx, err)
	n := m.started() - before
	m.mu.Unlock()
	m.deliver()
	return n
}

// started counts awaited tasks started so far (for step's return). m.mu held.
func (m *Manager) started() int { return m.tasks.startedAwaited }

// NextPass is the time, by the Manager's clock (Config.Clock), at which
// something next falls due: a release deadline (the last safe moment of a
// reservation window, an idle node's release, a release that waits for its
// window), a retry (a refused delete, a failed listing or key write), a
// timeout (an agent's deadline), an instance's next check; at most
// Config.Interval and at least a second after now. It is the pause Run
// takes between passes. A caller that drives the Manager with Reconcile
// instead of Run must call Reconcile again by then: a pass made later
// carries a release out late, and a release whose last safe moment passed
// can buy another billing unit (a Vultr hour, Hot Aisle minutes past the
// minimum; an idle or scale-down release of a Vultr instance then waits for
// the last safe moment of the hour bought, see Termination.NotBefore). A
// fixed tick is not safe, not even one of Config.Interval: Interval only
// bounds NextPass, and what falls due a moment after a pass waits almost a
// whole tick. Ask again after each Reconcile, and call Reconcile early
// after recording an intent (Apply, Delete, Release, MarkIdle): NextPass
// does not know of intents recorded after it answered, nor of the answers
// of calls that go on in the background (agent starts), which Run applies
// as they come. What falls due while a Reconcile waits for its calls is
// carried out by that Reconcile (see there).
func (m *Manager) NextPass() time.Time {
	now, next := m.nextDueAt()
	return maxTime(next, now.Add(time.Second))
}

// untilNext is how long Run may sleep: until the earliest due time, at
// most Config.Interval, at least a second.
func (m *Manager) untilNext() time.Duration {
	now, next := m.nextDueAt()
	return max(next.Sub(now), time.Second)
}

// nextDueAt returns now and the earliest due time, at most Config.Interval
// after now (see NextPass). It takes m.mu.
func (m *Manager) nextDueAt() (now, next time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now = m.clock.Now()
	next = now.Add(m.cfg.Interval)
	early := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	for _, r := range m.insts {
		if t := r.Termination; t != nil && r.Instance.Status == StatusTerminating && r.Instance.ID != "" {
			if t.Accepted.IsZero() {
				early(m.deleteAt(r))
			} else {
				early(t.NextAttempt)
			}
		}
	}
	early(m.nextDue())
	for _, t := range m.listRetry {
		if t.After(now) {
			early(t) // a failed listing is tried again then (the first one after start, if nothing else)
		}
	}
	early(m.nextKeyRetry(now))
	for _, f := range m.fleets {
		if f.growing() {
			early(m.growthGiveUp(f)) // its idle nodes' release is decided again then
		}
	}
	keep, hold := m.held(now)
	for r := range m.yielded {
		if r.Termination != nil {
			early(now) // a release waiting for its minimum gives way to a refused fleet (see yieldHolds)
		}
	}
	for _, r := range m.insts {
		early(m.idleReleaseDue(r, keep, hold, now))
		if r.Orphan && r.Termination == nil && r.Instance.Status != StatusTerminated {
			if t := m.orphanReleaseAt(r, now); t.After(now) {
				early(t) // an orphan's release, perhaps its unit's last safe moment
			}
		}
		if r.Termination == nil && r.Instance.Status == StatusBooting {
			// The agent's next start and its deadline (deferred to the end
			// of a prepaid minimum): a long Interval must not carry them.
			for _, t := range []time.Time{m.agentNext[r.Instance.RequestID], m.agentDeadline(r), maxTime(m.agentDeadline(r), m.prepaidUntil(r))} {
				if t.After(now) {
					early(t)
				}
			}
		}
	}
	for _, name := range m.order {
		early(m.rescanAt(name)) // not before the listing may be tried (sweepDue)
		early(m.sweepAt(name, now))
	}
	if m.rep != nil { // in process time: convert to the Manager's clock
		early(now.Add(time.Until(m.rep.nextSync)))
		if len(m.rep.voids) > 0 {
			early(m.rep.voidNext)
		}
	}
	return now, next
}
