package fleet_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// countingLeaseStore counts the intents that reads of one fleet's intents
// return (Intents with a fleet, IntentsAfter).
type countingLeaseStore struct {
	*fleet.MemoryLeaseStore
	mu   sync.Mutex
	read int
}

func (s *countingLeaseStore) add(n int) { s.mu.Lock(); s.read += n; s.mu.Unlock() }

func (s *countingLeaseStore) Intents(ctx context.Context, f string) ([]fleet.Intent, error) {
	ins, err := s.MemoryLeaseStore.Intents(ctx, f)
	if f != "" {
		s.add(len(ins))
	}
	return ins, err
}

func (s *countingLeaseStore) IntentsAfter(ctx context.Context, f string, after int64) ([]fleet.Intent, error) {
	ins, err := s.MemoryLeaseStore.IntentsAfter(ctx, f, after)
	s.add(len(ins))
	return ins, err
}

// The holder reads back each intent recorded through it before carrying
// it out; with a store that reads the tail (fleet.IntentTailReader) it
// reads only those after the last carried out, not every intent not yet
// acknowledged (acknowledged once a flush stored their effect, every
// third of the lease TTL): n marks cost O(n) intents read, not O(n²).
func TestHolderReadsOnlyNewIntents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &countingLeaseStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil)}
		rs := newReplicaSet(t, e, store, 1)
		m := rs.ms[0]
		require.NoError(t, m.Apply(t.Context(), spec("tail", 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"tail": 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		id := storedIdle(t, store, "tail")[0].Instance.ID
		store.mu.Lock()
		store.read = 0
		store.mu.Unlock()
		const marks = 200 // 100 ms apart: 20 s, two lease syncs
		for i := range marks {
			if i%2 == 0 {
				require.NoError(t, m.MarkBusy(id))
			} else {
				require.NoError(t, m.MarkIdle(id))
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Second)
		in := m.Instances("tail")
		require.Len(t, in, 1)
		assert.Equal(t, fleet.StatusIdle, in[0].Status, "the last mark (idle) was carried out")
		store.mu.Lock()
		read := store.read
		store.mu.Unlock()
		assert.LessOrEqual(t, read, 2*marks, "intents read back for %d marks", marks)
		rs.stopAll()
	})
}
