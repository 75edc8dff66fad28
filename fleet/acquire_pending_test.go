package fleet

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoIdleA builds a Manager over a fake Hot Aisle-like provider (per-minute
// billing, 30-minute minimum) with fleet "f" of two idle instances.
func twoIdleA(t *testing.T) (*Manager, *fakeProvider, []Instance) {
	t.Helper()
	p := newFakeProvider("hotaisle", vmOffer("hotaisle", 2.99, 30*time.Minute))
	m, _ := newTestManager(t, Config{Providers: []Provider{p}})
	require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 2, IdleTimeout: time.Minute}))
	passes(t, m, 5*time.Minute)
	insts := m.Instances("f")
	require.Len(t, insts, 2)
	require.Equal(t, 2, statuses(insts)[StatusIdle])
	return m, p, insts
}

// Issue 17, acceptance 3: Acquire returns an idle node, "never one in
// release". A caller that has just called Release on a node (the call
// returned nil) and then asks Acquire for a node must not get that node
// back: its release is decided, and the next loop step moves it to
// terminating while the caller runs a job on it.
func TestAcquireNeverHandsOutANodeJustReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _, insts := twoIdleA(t)
		for _, in := range insts {
			_, err := m.Release(t.Context(), in.ID)
			require.NoError(t, err)
		}
		got, err := m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, ErrNoIdle, "both nodes were released before Acquire; got %s", got.ID)
		require.NoError(t, m.Reconcile(t.Context()))
		for _, in := range m.Instances("f") {
			if in.ID == got.ID && got.ID != "" {
				assert.NotEqual(t, StatusTerminating, in.Status, "Acquire handed out a node that is being released")
			}
		}
	})
}

// Same with Delete: once Delete(fleet) has returned, every node of the
// fleet is to be released; Acquire must not hand one out as busy (a job
// would start on a node about to be deleted). Expected ErrNoIdle or
// ErrNotFound.
func TestAcquireAfterDeleteHandsOutNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _, _ := twoIdleA(t)
		require.NoError(t, m.Delete(t.Context(), "f"))
		got, err := m.Acquire(t.Context(), "f")
		assert.True(t, errors.Is(err, ErrNoIdle) || errors.Is(err, ErrNotFound),
			"Acquire after Delete returned %v, %q (a node of a fleet being deleted)", err, got.ID)
	})
}

// Acquire "marks it busy atomically (no other Acquire gets it)". A node
// the orchestrator has just marked busy with MarkBusy is not idle: Acquire
// must not hand it out to another job (two jobs on one machine).
func TestAcquireSkipsANodeJustMarkedBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _, insts := twoIdleA(t)
		for _, in := range insts {
			require.NoError(t, m.MarkBusy(in.ID))
		}
		got, err := m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, ErrNoIdle, "both nodes were marked busy; Acquire handed out %q", got.ID)
	})
}

// Typed errors: an unknown fleet is ErrNotFound, a cancelled context is
// context.Canceled, after Close ErrClosed; none of them marks a node busy.
func TestAcquireTypedErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _, _ := twoIdleA(t)
		_, err := m.Acquire(t.Context(), "nope")
		assert.ErrorIs(t, err, ErrNotFound)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err = m.Acquire(ctx, "f")
		assert.ErrorIs(t, err, context.Canceled)
		require.NoError(t, m.Reconcile(t.Context()))
		assert.Equal(t, 2, statuses(m.Instances("f"))[StatusIdle], "failed Acquires marked nothing busy")
		m.Close()
		_, err = m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, ErrClosed)
	})
}

// Many goroutines Acquire from a fleet of two idle nodes (giving each back
// with MarkIdle a second later) while Run runs and another goroutine
// deletes the fleet: no node is held by two callers at once, and no Acquire
// that began after Delete returned hands out a node (the fleet is being
// deleted; the node is about to be released under the job).
func TestAcquireRacingDeleteUnderRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _, _ := twoIdleA(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		var mu sync.Mutex
		var deleted bool
		held := map[string]bool{}
		var twice, late []string
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 60 {
					mu.Lock()
					after := deleted
					mu.Unlock()
					in, err := m.Acquire(t.Context(), "f")
					if err != nil {
						time.Sleep(time.Second)
						continue
					}
					mu.Lock()
					if held[in.ID] {
						twice = append(twice, in.ID)
					}
					held[in.ID] = true
					if after {
						late = append(late, in.ID)
					}
					mu.Unlock()
					time.Sleep(time.Second)
					mu.Lock()
					delete(held, in.ID)
					mu.Unlock()
					_ = m.MarkIdle(in.ID)
				}
			})
		}
		wg.Go(func() {
			time.Sleep(20 * time.Second)
			assert.NoError(t, m.Delete(t.Context(), "f"))
			mu.Lock()
			deleted = true
			mu.Unlock()
		})
		wg.Wait()
		cancel()
		<-done
		assert.Empty(t, twice, "a node held by two callers at once")
		assert.Empty(t, late, "nodes handed out by Acquires that began after Delete returned")
	})
}

// An hourly-billed offer whose minimum reservation is two hours (a
// provider may report any minimum; Offer.MinimumReservation is
// provider-neutral): the first two hours are paid whatever happens, so the
// next billing unit starts at 2:00 and an idle node's last safe moment is
// 2:00 less CalmHourlyReleaseMargin (acceptance 1). Release already defers to
// that moment (Instance.ReservedUntil says 1:57); the idle release must not
// throw the paid second hour away at 0:50, and Acquire must count it as
// paid time left.
func TestHourlyOfferWithALongerMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, m, in := hourlyIdleNode(t, 2*time.Hour, 35*time.Minute) // calm: 30 min after start
		assert.Equal(t, in.Created.Add(117*time.Minute), in.ReservedUntil, "the window covers the paid minimum")
		m.mu.Lock()
		left := m.paidUntil(m.insts[in.RequestID], time.Now()).Sub(time.Now())
		m.mu.Unlock()
		assert.Greater(t, left, time.Hour, "Acquire's paid time left counts the minimum")
		passes(t, m, time.Until(in.Created.Add(100*time.Minute)))
		assert.Equal(t, 1, p.live(), "released inside its paid minimum (status %s)", m.Instances("f")[0].Status)
		passes(t, m, 20*time.Minute)
		assert.Zero(t, p.live(), "released before the third hour")
	})
}
