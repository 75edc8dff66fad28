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
// orchestrator applies it again. Apply's doc: it returns "an error for a
// fleet being deleted" — and so it does on a single Manager. On replicas
// the Apply is stored as an intent and returns nil, then the holder drops
// it ("ignored" in an event only): the caller believes the fleet is
// wanted, and it is gone for good. Expected: an error from Apply, or the
// fleet back with its node once the delete is done.
func TestApplyWhileDeletingOnReplicasTesterD(t *testing.T) {
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
		errs := []error{}
		for _, m := range rs.ms {
			errs = append(errs, m.Apply(t.Context(), spec("ad", 1, vultrVM("ewr"))))
		}
		time.Sleep(3 * time.Hour)
		fs, err := store.Fleets(t.Context())
		require.NoError(t, err)
		for i, err := range errs {
			if err == nil {
				assert.Len(t, fs, 1, "replica %d accepted Apply during the delete (nil): the fleet should exist afterwards", i)
			}
		}
		if len(fs) == 1 {
			assert.True(t, converged(t, store, map[string]int{"ad": 1}), "re-applied fleet running")
		}
		for _, m := range rs.ms {
			_ = m.Delete(t.Context(), "ad")
		}
		time.Sleep(3 * time.Hour)
		rs.stopAll()
		e.assertNothingLeft()
	})
}
