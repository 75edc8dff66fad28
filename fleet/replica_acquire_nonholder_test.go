package fleet_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With replicas sharing a LeaseStore, Release, MarkBusy and MarkIdle work
// through any replica (stored intents). Acquire documents ErrNotFound only
// "for an unknown fleet": on a replica that does not lead a fleet that
// exists (applied through it, idle nodes in the store) an orchestrator
// expects a node or ErrNoIdle, not ErrNotFound, and never the node another
// replica's Acquire handed out.
func TestAcquireThroughAnyReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("ra", 2, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"ra": 2}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		got := map[string]int{}
		for i, m := range rs.ms {
			in, err := m.Acquire(t.Context(), "ra")
			assert.False(t, errors.Is(err, fleet.ErrNotFound), "replica %d: Acquire on an existing fleet: %v", i, err)
			if err == nil {
				got[in.ID]++
			}
		}
		for id, n := range got {
			assert.Equal(t, 1, n, "%s handed out by two replicas", id)
		}
		for _, m := range rs.ms {
			_ = m.Delete(t.Context(), "ra")
		}
		for deadline := time.Now().Add(3 * time.Hour); len(rs.ms[0].Fleets()) > 0; time.Sleep(time.Minute) {
			require.True(t, time.Now().Before(deadline), "not deleted")
		}
		time.Sleep(time.Hour)
		rs.stopAll()
		e.assertNothingLeft()
	})
}
