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

// A pass whose ctx is cancelled starts no new create.
func TestCancelledPassStopsCreating(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		m, _ := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 50}))
		ctx, cancel := context.WithCancel(t.Context())
		p.onCreate = cancel
		_ = m.Reconcile(ctx)
		synctest.Wait()
		assert.LessOrEqual(t, p.count("create"), m.pol.MaxConcurrentCreates, "only the creates already started")
		passes(t, m, time.Minute)
		assert.Equal(t, 50, p.count("create"), "a later pass goes on")
	})
}

// After Close nothing runs and every method says ErrClosed.
func TestCloseEndsEverythingAndRefusesCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		m, _ := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 2}))
		passes(t, m, 5*time.Minute)
		id := m.Instances("f")[0].ID
		done := make(chan error, 1)
		go func() { done <- m.Run(t.Context()) }()
		time.Sleep(time.Second)
		m.Close()
		assert.ErrorIs(t, <-done, ErrClosed, "Close ends Run")
		creates := p.count("create")
		assert.ErrorIs(t, m.Apply(t.Context(), Spec{Name: "g", Nodes: 3}), ErrClosed)
		assert.ErrorIs(t, m.Delete(t.Context(), "f"), ErrClosed)
		_, err := m.Release(t.Context(), id)
		assert.ErrorIs(t, err, ErrClosed)
		assert.ErrorIs(t, m.MarkBusy(id), ErrClosed)
		assert.ErrorIs(t, m.Reconcile(t.Context()), ErrClosed)
		assert.ErrorIs(t, m.Run(t.Context()), ErrClosed)
		_, err = m.Offers(t.Context(), Requirements{})
		assert.ErrorIs(t, err, ErrClosed)
		time.Sleep(time.Hour)
		assert.Equal(t, creates, p.count("create"), "nothing created after Close")
		m.Close() // idempotent
	})
}

// countingStore counts writes and can fail them.
type countingStore struct {
	*MemoryStore
	mu      sync.Mutex
	puts    int
	failing bool
}

func (s *countingStore) PutInstance(ctx context.Context, r InstanceRecord) error {
	s.mu.Lock()
	s.puts++
	fail := s.failing
	s.mu.Unlock()
	if fail {
		return errors.New("store down")
	}
	return s.MemoryStore.PutInstance(ctx, r)
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts
}

// Quiet passes write nothing; a failed write stays dirty and is retried.
func TestStoreReceivesOnlyChangesAndKeepsFailedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		store := &countingStore{MemoryStore: NewMemoryStore()}
		m, log := newTestManager(t, Config{Providers: []Provider{p}, Store: store})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 50}))
		passes(t, m, 5*time.Minute)
		require.Equal(t, 50, statuses(m.Instances("f"))[StatusIdle])
		before := store.count()
		passes(t, m, 100*time.Second) // 10 quiet passes
		assert.Zero(t, store.count()-before, "quiet passes write nothing")

		store.mu.Lock()
		store.failing = true
		store.mu.Unlock()
		id := m.Instances("f")[0].ID
		require.NoError(t, m.MarkBusy(id))
		_ = m.Reconcile(t.Context())
		assert.Equal(t, 1, log.count(EventStoreWriteFailed))
		store.mu.Lock()
		store.failing = false
		store.mu.Unlock()
		require.NoError(t, m.Reconcile(t.Context()))
		recs, err := store.Instances(t.Context())
		require.NoError(t, err)
		busy := 0
		for _, r := range recs {
			if r.Busy {
				busy++
			}
		}
		assert.Equal(t, 1, busy, "the failed write was retried")
	})
}

// Terminated records are pruned after HistoryRetention; History is bounded.
func TestTerminatedRecordsArePrunedAndHistoryBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		store := NewMemoryStore()
		m, _ := newTestManager(t, Config{Providers: []Provider{p}, Store: store,
			Policy: Policy{Release: ReleaseNow, HistoryRetention: time.Hour}})
		for range 20 {
			require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 5}))
			passes(t, m, 3*time.Minute)
			require.NoError(t, m.Delete(t.Context(), "f"))
			passes(t, m, 2*time.Minute)
		}
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "g", Nodes: 1}))
		passes(t, m, 3*time.Minute)
		id := m.Instances("g")[0].ID
		for i := range 40 {
			if i%2 == 0 {
				require.NoError(t, m.MarkBusy(id))
			} else {
				require.NoError(t, m.MarkIdle(id))
			}
			require.NoError(t, m.Reconcile(t.Context()))
		}
		assert.LessOrEqual(t, len(m.Instances("g")[0].History), MaxHistory)
		assert.Equal(t, StatusPending, m.Instances("g")[0].History[0].Status, "the first change is kept")
		passes(t, m, 2*time.Hour)
		recs, err := store.Instances(t.Context())
		require.NoError(t, err)
		assert.Len(t, recs, 1, "only the live instance is kept")
		assert.Len(t, m.Records(), 1)
	})
}

// Under Run an event reaches OnEvent within a second of the change that
// made it (an intent wakes the loop), not one interval later.
func TestEventsDeliveredWithinASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		got := make(chan time.Time, 100)
		m, err := NewManager(Config{Providers: []Provider{p}, Owner: "t1", Interval: time.Minute, OnEvent: func(e Event) {
			if e.Type == EventFleetApplied {
				got <- time.Now()
			}
		}})
		require.NoError(t, err)
		defer m.Close()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		time.Sleep(30 * time.Second) // Run sleeps for its one-minute interval
		applied := time.Now()
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		delivered := <-got
		assert.Less(t, delivered.Sub(applied), time.Second)
		cancel()
		<-done
	})
}
