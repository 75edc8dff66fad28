package fleet_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Many workers on three replicas (one MemoryLeaseStore, clouds on a bad
// day) Acquire nodes of one fleet, hold them, and give them back with
// MarkIdle or Release through any replica. A node is never handed out
// while another worker holds it; after Delete, Apply of the same fleet is
// refused on every replica; nothing is left billing; goroutines end
// (goleak in TestMain).
func TestReplicaHammer(t *testing.T) {
	for seed := range uint64(2) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { hammer(t, seed) })
		})
	}
}

func hammer(t *testing.T, seed uint64) {
	e := newEnv(t, fleet.Policy{}, sim.WithChaos(seed+1, sim.ChaosBadDay()))
	store := fleet.NewMemoryLeaseStore(nil)
	rs := newReplicaSet(t, e, store, 3)
	convergedHolder(t, rs, "hm", 3)
	var mu sync.Mutex
	holding := map[string]int{}
	var twice []string
	got := 0
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for range 40 {
				m := rs.ms[rng.IntN(3)]
				in, err := m.Acquire(t.Context(), "hm")
				if err != nil {
					if !errors.Is(err, fleet.ErrNoIdle) && !errors.Is(err, fleet.ErrNotRecorded) {
						t.Errorf("Acquire: untyped error %v", err)
					}
					time.Sleep(time.Duration(rng.IntN(5000)) * time.Millisecond)
					continue
				}
				mu.Lock()
				if holding[in.ID] > 0 {
					twice = append(twice, in.ID)
				}
				holding[in.ID]++
				got++
				mu.Unlock()
				time.Sleep(time.Duration(1+rng.IntN(30)) * time.Second)
				mu.Lock()
				holding[in.ID]--
				mu.Unlock()
				back := rs.ms[rng.IntN(3)]
				if rng.IntN(4) == 0 {
					_, err = back.Release(t.Context(), in.ID)
				} else {
					err = back.MarkIdle(in.ID)
				}
				if err != nil {
					t.Logf("give back %s: %v", in.ID, err)
				}
			}
		}()
	}
	wg.Wait()
	assert.GreaterOrEqual(t, got, 3, "workers got nodes (5–16 per run: the bad day makes leases move)")
	t.Logf("acquired %d times", got)
	assert.Empty(t, twice, "nodes handed out while another worker held them")
	require.NoError(t, rs.ms[0].Delete(t.Context(), "hm"))
	for i, m := range rs.ms {
		assert.Error(t, m.Apply(t.Context(), spec("hm", 3, vultrVM("ewr"))), "replica %d: Apply right after Delete", i)
	}
	time.Sleep(4 * time.Hour)
	rs.stopAll()
	e.assertNothingLeft()
}

// On a single Manager, Apply of a fleet whose Delete returned nil is
// refused both before the loop takes the Delete and while its instances
// are being released; once it is gone, Apply creates it anew.
func TestApplyDuringDeleteSingle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), spec("dd", 1, vultrVM("ewr"))))
		require.True(t, e.runUntil(time.Hour, func() bool { return len(e.m.Instances("dd")) == 1 }))
		require.NoError(t, e.m.Delete(t.Context(), "dd"))
		assert.Error(t, e.m.Apply(t.Context(), spec("dd", 1, vultrVM("ewr"))), "Delete queued")
		require.NoError(t, e.m.Reconcile(t.Context()))
		assert.Error(t, e.m.Apply(t.Context(), spec("dd", 1, vultrVM("ewr"))), "Delete under way")
		require.True(t, e.runUntil(3*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }), "fleet gone")
		e.assertNothingLeft()
	})
}
