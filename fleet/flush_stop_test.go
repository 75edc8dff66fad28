package fleet

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusingStore fails every instance write while down, and those of the
// request ids in refuse always; it records the writes tried.
type refusingStore struct {
	*MemoryStore
	mu     sync.Mutex
	down   bool
	refuse map[string]bool
	tried  []string
}

func (s *refusingStore) PutInstance(ctx context.Context, r InstanceRecord) error {
	s.mu.Lock()
	s.tried = append(s.tried, r.Instance.RequestID)
	fail := s.down || s.refuse[r.Instance.RequestID]
	s.mu.Unlock()
	if fail {
		return errors.New("store refuses")
	}
	return s.MemoryStore.PutInstance(ctx, r)
}

func (s *refusingStore) set(down bool, refuse ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down, s.tried, s.refuse = down, nil, map[string]bool{}
	for _, id := range refuse {
		s.refuse[id] = true
	}
}

func (s *refusingStore) triedNow() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tried)
}

// A flush stops at the first write that fails (a store that cannot be
// reached fails each after its timeout: one per dirty record would hold
// the step for all of them); the records not tried stay dirty. The next
// flush writes the records whose last write failed after the others, so
// that one the store refuses for good does not keep them from being
// written.
func TestFlushStopsAtTheFirstFailedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		store := &refusingStore{MemoryStore: NewMemoryStore()}
		m, log := newTestManager(t, Config{Providers: []Provider{p}, Store: store})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 3}))
		passes(t, m, 5*time.Minute)
		m.mu.Lock()
		ids := slices.Sorted(func(yield func(string) bool) {
			for id := range m.insts {
				if !yield(id) {
					return
				}
			}
		})
		versions := map[string]int64{}
		for _, id := range ids {
			m.dirtyI[id] = true
			versions[id] = m.insts[id].Version
		}
		m.mu.Unlock()
		require.Len(t, ids, 3)

		store.set(true)
		require.Error(t, m.flush(t.Context()))
		assert.Equal(t, ids[:1], store.triedNow(), "one failed write ends the flush")
		m.mu.Lock()
		assert.Len(t, m.dirtyI, 3, "the records not tried stay dirty")
		m.mu.Unlock()
		assert.Equal(t, 1, log.count(EventStoreWriteFailed))

		store.set(false, ids[0]) // the store is back, but refuses ids[0] for good
		require.Error(t, m.flush(t.Context()))
		assert.Equal(t, []string{ids[1], ids[2], ids[0]}, store.triedNow(), "the record that failed last is written last")
		m.mu.Lock()
		assert.Equal(t, map[string]bool{ids[0]: true}, m.dirtyI)
		for _, id := range ids[1:] {
			assert.Equal(t, versions[id]+1, m.insts[id].Version, "written")
		}
		m.mu.Unlock()

		store.set(false)
		require.NoError(t, m.flush(t.Context()))
		assert.Equal(t, ids[:1], store.triedNow())
		m.mu.Lock()
		assert.Empty(t, m.dirtyI)
		assert.Empty(t, m.writeFailed)
		m.mu.Unlock()
	})
}
