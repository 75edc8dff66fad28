package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// restartWith closes the env's Manager and starts another over store.
func (e *env) restartWith(store fleet.Store) {
	e.m.Close()
	e.store = store
	e.m = e.manager(store)
}

// Tester E. A Hot Aisle bare-metal server released and rented again by its
// fleet, then the Manager restarted on the same Store (which holds the
// closed first rental and the open second under one provider id): the
// second rental stays the fleet's idle node, nothing is released (8 h
// prepaid each), nothing new is bought, and calls by id reach it.
func TestRerentedServerSurvivesARestartOnTheSameStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		_, second := e.rerented()
		e.restartWith(e.store)
		e.run(2 * time.Hour)

		assert.Equal(t, 1, calls(e.hot.Calls(), hotBMRelease, 0), "released once: the first rental")
		assert.Equal(t, 2, calls(e.hot.Calls(), "POST /api/teams/{team}/bare_metal/", 201), "no third rental")
		a := activeOf(e.m.Instances("f"))
		require.Len(t, a, 1)
		assert.Equal(t, second.RequestID, a[0].RequestID)
		assert.Equal(t, fleet.StatusIdle, a[0].Status)
		got, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		assert.Equal(t, second.RequestID, got.RequestID)
		require.NoError(t, e.m.MarkIdle(second.ID))
		require.NoError(t, e.m.Reconcile(t.Context()))
		_, err = e.m.Release(t.Context(), second.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
		require.NoError(t, err)
		require.True(t, e.runUntil(time.Hour, func() bool { return calls(e.hot.Calls(), hotBMRelease, 204) == 2 }),
			"the second rental released by its provider id after the restart")
	})
}

// Tester E. The same, restarted with an empty Store and the fleet applied
// again: the rented-again server carries this owner's label for fleet "f"
// and is adopted as its node; it is not released as an orphan nor doubled
// by a new reservation (each would buy or waste an 8-hour minimum).
func TestRerentedServerAdoptedAfterAnEmptyStoreRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		_, second := e.rerented()
		e.restartWith(fleet.NewMemoryStore())
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, hotType("bm-mi300x-8"))))
		e.run(2 * time.Hour)

		assert.Equal(t, 1, calls(e.hot.Calls(), hotBMRelease, 0), "released once: the first rental")
		assert.Equal(t, 2, calls(e.hot.Calls(), "POST /api/teams/{team}/bare_metal/", 201), "no third rental")
		a := activeOf(e.m.Instances("f"))
		require.Len(t, a, 1)
		assert.Equal(t, second.ID, a[0].ID)
		assert.Equal(t, second.RequestID, a[0].RequestID)
		assert.Equal(t, 1, live(e.hot.Resources(), "bare_metal"))
	})
}
