package fleet_test

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acquire's promise across replicas on one MemoryLeaseStore: many
// goroutines calling Acquire on every replica at once, each giving its node
// back with MarkIdle through a replica other than the one that handed it
// out, never get a node another goroutine holds, and every node is handed
// out again after its MarkIdle (none lost). Holds on main: no existing test
// mixes concurrent Acquires on all replicas with MarkIdle through
// non-holders.
func TestConcurrentAcquireAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 3)
		convergedHolder(t, rs, "cx", 3)
		var mu sync.Mutex
		holder := map[string]int{} // node -> worker holding it
		handed := map[string]int{} // node -> times handed out
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				for k := 0; k < 8; {
					var in fleet.Instance
					var err error
					for i := range rs.ms {
						in, err = rs.ms[(w+i)%3].Acquire(t.Context(), "cx")
						if err == nil {
							break
						}
					}
					if err != nil {
						if !errors.Is(err, fleet.ErrNoIdle) {
							t.Errorf("worker %d: %v", w, err)
							return
						}
						time.Sleep(7 * time.Second)
						continue
					}
					mu.Lock()
					if o, ok := holder[in.ID]; ok {
						t.Errorf("node %s handed to worker %d while worker %d holds it", in.ID, w, o)
					}
					holder[in.ID] = w
					handed[in.ID]++
					mu.Unlock()
					time.Sleep(time.Duration(40+w*13) * time.Second)
					mu.Lock()
					delete(holder, in.ID)
					mu.Unlock()
					require.NoError(t, rs.ms[(w+k+1)%3].MarkIdle(in.ID))
					k++
				}
			})
		}
		wg.Wait()
		assert.Len(t, handed, 3, "every node handed out: %v", handed)
		require.NoError(t, rs.ms[0].Delete(t.Context(), "cx"))
		time.Sleep(3 * time.Hour)
		rs.stopAll()
		e.assertNothingLeft()
	})
}
