package fleet_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// lostAnswerStore commits Acquire's busy mark and then answers an error
// (the answer was lost: a timeout after the commit), once; with failRead
// the holder's next read of the fleet's intents fails too.
type lostAnswerStore struct {
	*fleet.MemoryLeaseStore
	mu       sync.Mutex
	armed    bool
	failRead bool
}

var errLostAnswer = errors.New("lost answer: timeout after commit")

func (s *lostAnswerStore) PutIntent(ctx context.Context, in fleet.Intent) (int64, error) {
	seq, err := s.MemoryLeaseStore.PutIntent(ctx, in)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.armed && in.Kind == fleet.IntentBusy {
		s.armed = false
		return 0, errLostAnswer
	}
	return seq, err
}

func (s *lostAnswerStore) readFails() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.failRead
	s.failRead = false
	return f
}

func (s *lostAnswerStore) Intents(ctx context.Context, f string) ([]fleet.Intent, error) {
	if f != "" && s.readFails() {
		return nil, errLostAnswer
	}
	return s.MemoryLeaseStore.Intents(ctx, f)
}

func (s *lostAnswerStore) IntentsAfter(ctx context.Context, f string, after int64) ([]fleet.Intent, error) {
	if s.readFails() {
		return nil, errLostAnswer
	}
	return s.MemoryLeaseStore.IntentsAfter(ctx, f, after)
}

// Acquire on a replica holder whose busy-mark write committed but whose
// answer was lost: either the node is handed out (the mark is found
// stored), or Acquire answers ErrNotRecorded and the node stays idle for
// the next Acquire. Never an error with the node left busy: no MarkIdle
// would ever come for it, and a busy node is never released for idleness.
func TestAcquireWithALostAnswer(t *testing.T) {
	for _, failRead := range []bool{false, true} {
		name := map[bool]string{false: "found stored", true: "read fails too"}[failRead]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := &lostAnswerStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil)}
				rs := newReplicaSet(t, e, store, 1)
				m := rs.ms[0]
				require.NoError(t, m.Apply(t.Context(), spec("la", 1, vultrVM("ewr"))))
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"la": 1}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged")
				}
				store.mu.Lock()
				store.armed, store.failRead = true, failRead
				store.mu.Unlock()
				in, err := m.Acquire(t.Context(), "la")
				time.Sleep(time.Minute) // two lease syncs: every stored intent read back
				got := m.Instances("la")
				require.Len(t, got, 1)
				if failRead {
					require.ErrorIs(t, err, fleet.ErrNotRecorded)
					assert.Equal(t, fleet.StatusIdle, got[0].Status, "Acquire failed: the node is not busy")
					in, err = m.Acquire(t.Context(), "la")
					require.NoError(t, err, "the node is idle for the next Acquire")
				} else {
					require.NoError(t, err, "the mark is stored: the node is handed out")
					assert.Equal(t, fleet.StatusBusy, got[0].Status)
				}
				assert.Equal(t, got[0].RequestID, in.RequestID)
				rs.stopAll()
			})
		})
	}
}
