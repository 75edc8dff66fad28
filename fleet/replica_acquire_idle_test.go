package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With replicas, a node given back with MarkIdle is handed out again by
// the holder's Acquire at once, through whichever replica the MarkIdle was
// recorded: the holder counts the stored idle mark before carrying it out
// (reading the fleet's intents when its own view has no idle node). A
// MarkBusy recorded after it takes the node again.
func TestAcquireOnTheHolderRightAfterMarkIdle(t *testing.T) {
	for _, through := range []string{"holder", "other replica"} {
		t.Run(through, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := fleet.NewMemoryLeaseStore(nil)
				rs := newReplicaSet(t, e, store, 2)
				require.NoError(t, rs.ms[0].Apply(t.Context(), spec("mi", 1, vultrVM("ewr"))))
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"mi": 1}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged")
				}
				h := rs.holderOf(t, "mi")
				require.GreaterOrEqual(t, h, 0)
				marker := rs.ms[h]
				if through != "holder" {
					marker = rs.ms[1-h]
				}
				x, err := rs.ms[h].Acquire(t.Context(), "mi")
				require.NoError(t, err)
				time.Sleep(2 * time.Minute) // the busy mark is carried out
				require.NoError(t, marker.MarkIdle(x.ID))
				got, err := rs.ms[h].Acquire(t.Context(), "mi")
				require.NoError(t, err, "the node given back with MarkIdle")
				assert.Equal(t, x.ID, got.ID)
				_, err = rs.ms[h].Acquire(t.Context(), "mi")
				assert.ErrorIs(t, err, fleet.ErrNoIdle, "one node, handed out again once")
				time.Sleep(2 * time.Minute)
				require.NoError(t, marker.MarkIdle(x.ID))
				require.NoError(t, marker.MarkBusy(x.ID))
				_, err = rs.ms[h].Acquire(t.Context(), "mi")
				assert.ErrorIs(t, err, fleet.ErrNoIdle, "marked busy after the idle mark")
				require.NoError(t, rs.ms[0].Delete(t.Context(), "mi"))
				time.Sleep(3 * time.Hour)
				rs.stopAll()
				e.assertNothingLeft()
			})
		})
	}
}

// A replica that does not hold a fleet being deleted answers Acquire with
// ErrNotFound (as the holder does), before and after the holder carried the
// Delete out: an orchestrator reading ErrNoIdle would try to grow it.
func TestAcquireOnANonHolderOfADeletingFleetIsNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("dl", 1, hotType("vm-mi300x-1"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"dl": 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		h := rs.holderOf(t, "dl")
		require.GreaterOrEqual(t, h, 0)
		require.NoError(t, rs.ms[1-h].Delete(t.Context(), "dl", fleet.WithReleasePolicy(fleet.ReleaseAtReservationEnd)))
		for i, m := range rs.ms {
			_, err := m.Acquire(t.Context(), "dl")
			assert.ErrorIs(t, err, fleet.ErrNotFound, "replica %d, Delete recorded", i)
		}
		time.Sleep(2 * time.Minute) // carried out; the node waits for its minimum
		fs, err := store.Fleets(t.Context())
		require.NoError(t, err)
		require.Len(t, fs, 1)
		require.True(t, fs[0].Deleting)
		for i, m := range rs.ms {
			_, err := m.Acquire(t.Context(), "dl")
			assert.ErrorIs(t, err, fleet.ErrNotFound, "replica %d, Delete carried out", i)
		}
		time.Sleep(3 * time.Hour)
		rs.stopAll()
		e.assertNothingLeft()
	})
}
