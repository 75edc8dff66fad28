package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fleet is being deleted (its server's release still waits) when the
// orchestrator applies it again. Apply's doc: it returns an error for a
// fleet being deleted. Every replica answers it, as a single Manager does
// (the holder would drop the Apply, and the fleet be gone for good).
func TestApplyWhileDeletingOnReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("ad", 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"ad": 1}); time.Sleep(10 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		require.NoError(t, rs.ms[0].Delete(t.Context(), "ad"))
		deleting := func() bool {
			fs, err := store.Fleets(t.Context())
			require.NoError(t, err)
			return len(fs) == 1 && fs[0].Deleting
		}
		for deadline := time.Now().Add(10 * time.Minute); !deleting(); time.Sleep(time.Second) {
			require.True(t, time.Now().Before(deadline), "never stored as deleting")
		}
		for i, m := range rs.ms {
			err := m.Apply(t.Context(), spec("ad", 1, vultrVM("ewr")))
			assert.ErrorContains(t, err, "fleet ad is being deleted", "replica %d", i)
		}
		time.Sleep(3 * time.Hour)
		fs, err := store.Fleets(t.Context())
		require.NoError(t, err)
		assert.Empty(t, fs, "deleted")
		rs.stopAll()
		e.assertNothingLeft()
	})
}

// Apply right after a Delete recorded through the other replica (not yet
// carried out by the holder) is refused on both replicas; once the fleet
// is gone, Apply brings it back.
func TestApplyRightAfterDeleteOnAnotherReplica(t *testing.T) {
	for _, through := range []string{"holder", "other"} {
		t.Run("delete through the "+through, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := fleet.NewMemoryLeaseStore(nil)
				rs := newReplicaSet(t, e, store, 2)
				h := convergedHolder(t, rs, "rd", 1)
				d := h
				if through == "other" {
					d = 1 - h
				}
				require.NoError(t, rs.ms[d].Delete(t.Context(), "rd"))
				for i, m := range []*fleet.Manager{rs.ms[1-d], rs.ms[d]} {
					err := m.Apply(t.Context(), spec("rd", 2, vultrVM("ewr")))
					assert.ErrorContains(t, err, "fleet rd is being deleted", "call %d", i)
				}
				for deadline := time.Now().Add(3 * time.Hour); len(rs.ms[0].Fleets()) > 0; time.Sleep(time.Minute) {
					require.True(t, time.Now().Before(deadline), "not deleted")
				}
				require.NoError(t, rs.ms[1-d].Apply(t.Context(), spec("rd", 2, vultrVM("ewr"))), "the fleet is gone: applied anew")
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"rd": 2}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged again")
				}
				require.NoError(t, rs.ms[d].Delete(t.Context(), "rd"))
				time.Sleep(3 * time.Hour)
				rs.stopAll()
				e.assertNothingLeft()
			})
		})
	}
}
