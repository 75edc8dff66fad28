package fleet

import (
	"context"
	"sync"
	"time"
)

// taskKind sorts tasks for their bounds and for what Reconcile waits on.
type taskKind int

const (
	taskList   taskKind = iota // one provider listing
	taskCall                   // a delete, get, VPC or label call
	taskCreate                 // a create call (bounded by Policy.MaxConcurrentCreates)
	taskAgent                  // an agent start or check (not awaited by Reconcile)
	taskKinds
)

// taskSet tracks the provider calls under way. Written by the loop (m.mu
// held) except results, which tasks append under resMu.
type taskSet struct {
	inflight map[string]taskKind
	n        [taskKinds]int
	// startedAwaited counts awaited tasks ever started (Reconcile's rounds).
	startedAwaited int
	wake           chan struct{} // a result or an intent is waiting (capacity 1)

	resMu   sync.Mutex
	results []taskResult
	signal  chan struct{} // closed (and replaced) when a result arrives
}

type taskResult struct {
	key   string
	kind  taskKind
	apply func(now time.Time) // run by the loop with m.mu held
}

func newTaskSet() taskSet {
	return taskSet{inflight: map[string]taskKind{}, wake: make(chan struct{}, 1), signal: make(chan struct{})}
}

// busy reports whether a task with this key is under way. m.mu held.
func (m *Manager) busy(key string) bool {
	_, ok := m.tasks.inflight[key]
	return ok
}

// free is how many more tasks of kind may start now. m.mu held.
func (m *Manager) free(kind taskKind) int {
	limit := m.pol.Parallelism
	switch kind {
	case taskCreate:
		limit = m.pol.MaxConcurrentCreates
	case taskList:
		return 1 << 20
	}
	return limit - m.tasks.n[kind]
}

// launch runs fn as a task owned by the Manager: fn makes the provider
// calls under a context bounded by timeout and ended by Close, and returns
// the function that applies their outcome; the loop runs it, with m.mu
// held, against the records as they are then. A key already under way is
// not started twice. m.mu held.
func (m *Manager) launch(key string, kind taskKind, timeout time.Duration, fn func(ctx context.Context) func(now time.Time)) bool {
	return m.launchUnder(m.bgCtx, key, kind, timeout, fn)
}

// launchUnder is launch with a parent context (derived from the Manager's)
// that the loop may cancel early. m.mu held.
func (m *Manager) launchUnder(parent context.Context, key string, kind taskKind, timeout time.Duration, fn func(ctx context.Context) func(now time.Time)) bool {
	if m.busy(key) || m.closed.Load() {
		return false
	}
	m.tasks.inflight[key] = kind
	m.tasks.n[kind]++
	if kind != taskAgent {
		m.tasks.startedAwaited++
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		ctx, cancel := context.WithTimeout(parent, timeout)
		apply := fn(ctx)
		cancel()
		m.tasks.resMu.Lock()
		m.tasks.results = append(m.tasks.results, taskResult{key: key, kind: kind, apply: apply})
		close(m.tasks.signal)
		m.tasks.signal = make(chan struct{})
		m.tasks.resMu.Unlock()
		m.wake()
	}()
	return true
}

// resultSignal returns a channel closed when the next result arrives.
func (m *Manager) resultSignal() <-chan struct{} {
	m.tasks.resMu.Lock()
	defer m.tasks.resMu.Unlock()
	return m.tasks.signal
}

// drainResults applies the outcomes of finished tasks. m.mu held.
func (m *Manager) drainResults(now time.Time) {
	m.tasks.resMu.Lock()
	res := m.tasks.results
	m.tasks.results = nil
	m.tasks.resMu.Unlock()
	for _, r := range res {
		delete(m.tasks.inflight, r.key)
		m.tasks.n[r.kind]--
		if r.apply != nil {
			r.apply(now)
		}
	}
}

// awaited is how many tasks Reconcile waits for are under way. m.mu held.
func (m *Manager) awaited() int {
	return m.tasks.n[taskList] + m.tasks.n[taskCall] + m.tasks.n[taskCreate]
}
