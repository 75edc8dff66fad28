package fleet_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// Workers Acquire through any replica (the holder hands out), hold the
// node for a while, and give it back with MarkIdle through any replica,
// while the fleet's lease moves (a replica dies and comes back). A node is
// never handed out while a worker holds it, and at the end no node is left
// busy.
func TestAcquireStormAcrossReplicas(t *testing.T) {
	for seed := range 4 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := fleet.NewMemoryLeaseStore(nil)
				rs := newReplicaSet(t, e, store, 3)
				const nodes = 3
				require.NoError(t, rs.ms[0].Apply(t.Context(), spec("st", nodes, vultrVM("ewr"))))
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"st": nodes}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged")
				}
				var mu sync.Mutex
				held := map[string]int{} // request id → worker
				handed, twice := 0, 0
				var mgrMu sync.Mutex
				mgr := func(i int) *fleet.Manager { mgrMu.Lock(); defer mgrMu.Unlock(); return rs.ms[i] }
				end := time.Now().Add(40 * time.Minute)
				var wg sync.WaitGroup
				for w := range 6 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
						for time.Now().Before(end) {
							in, err := mgr(rng.IntN(3)).Acquire(t.Context(), "st")
							if err != nil {
								time.Sleep(time.Duration(1+rng.IntN(5)) * time.Second)
								continue
							}
							mu.Lock()
							handed++
							if o, ok := held[in.RequestID]; ok {
								twice++
								t.Errorf("node %s handed to worker %d while worker %d holds it", in.RequestID, w, o)
							}
							held[in.RequestID] = w
							mu.Unlock()
							time.Sleep(time.Duration(1+rng.IntN(90)) * time.Second)
							mu.Lock()
							delete(held, in.RequestID)
							mu.Unlock()
							for {
								err := mgr(rng.IntN(3)).MarkIdle(in.RequestID)
								if err == nil || errors.Is(err, fleet.ErrNotFound) {
									break
								}
								time.Sleep(time.Second)
							}
						}
					}()
				}
				time.Sleep(10 * time.Minute)
				rs.stop(1) // dies: its leases run out
				time.Sleep(10 * time.Minute)
				rs.start(1)
				time.Sleep(5 * time.Minute)
				rs.stop(2)
				rs.start(2)
				wg.Wait()
				time.Sleep(5 * time.Minute)
				t.Logf("handed out %d times", handed)
				assert.Positive(t, handed)
				assert.Zero(t, twice)
				recs, err := store.Instances(t.Context())
				require.NoError(t, err)
				for _, r := range recs {
					if r.Termination == nil {
						assert.NotEqual(t, fleet.StatusBusy, r.Instance.Status, "node %s busy with no job", r.Instance.RequestID)
					}
				}
				rs.stopAll()
			})
		})
	}
}

// Applies of one fleet with varying sizes through random replicas, while
// replicas die and come back (the lease moves with intents pending): the
// fleet ends at the size of the last Apply that returned nil.
func TestAppliesThroughReplicasWhileTheLeaseMoves(t *testing.T) {
	for seed := range 4 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := fleet.NewMemoryLeaseStore(nil)
				rs := newReplicaSet(t, e, store, 3)
				rng := rand.New(rand.NewPCG(uint64(seed), 7))
				down := -1
				last := 0
				for i := range 40 {
					if i%8 == 4 {
						if down >= 0 {
							rs.start(down)
						}
						down = rng.IntN(3)
						rs.stop(down)
					}
					k := rng.IntN(3)
					if k == down {
						k = (k + 1) % 3
					}
					n := 1 + rng.IntN(3)
					if err := rs.ms[k].Apply(t.Context(), spec("ap", n, vultrVM("ewr"))); err == nil {
						last = n
					}
					time.Sleep(time.Duration(rng.IntN(15000)) * time.Millisecond)
				}
				if down >= 0 {
					rs.start(down)
				}
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"ap": last}); time.Sleep(30 * time.Second) {
					if !time.Now().Before(deadline) {
						t.Fatalf("not at %d nodes; stored spec %d", last, storedFleetSpec(t, store, "ap").Nodes)
					}
				}
				assert.Equal(t, last, storedFleetSpec(t, store, "ap").Nodes)
				rs.stopAll()
			})
		})
	}
}
