package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acquire marks the node busy "at once (no other Acquire gets it)". A
// process that Acquires a node and then shuts its Manager down (Close; the
// Store keeps everything) and starts a new Manager on the same Store must
// find that node busy: the job runs on it. Got: the busy mark is dropped
// by Close (it was only queued), the new Manager shows the node idle and
// Acquire hands it out a second time.
func TestAcquireThenCloseKeepsTheBusyMark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.idleFleet("f", 1, 10*time.Minute, vultrType("vcg-a100-12c-120g-80vram"))
		got, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		e.m.Close()
		e.m = e.manager(e.store)
		require.NoError(t, e.m.Reconcile(t.Context()))
		in := e.only("f")
		assert.Equal(t, fleet.StatusBusy, in.Status, "the node Acquire handed out before Close")
		again, err := e.m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out %s twice (first %s)", again.ID, got.ID)
	})
}

// Close carries out every intent a call recorded before it (the call
// returned nil): a new Manager on the same Store finds each of them, not
// the state before the calls. A MarkIdle that gave a node back, a MarkBusy,
// a Release, a Delete, and an Apply of a new fleet, all made right before
// Close with no loop step in between.
func TestCloseCarriesOutWhatWasRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		req := vultrType("vcg-a100-12c-120g-80vram")
		ins := e.idleFleet("f", 3, 10*time.Minute, req)
		e.idleFleet("d", 1, 10*time.Minute, req)
		back, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		e.run(time.Minute)
		var busy, released string
		for _, in := range ins {
			switch {
			case in.ID == back.ID:
			case busy == "":
				busy = in.ID
			default:
				released = in.ID
			}
		}
		require.NoError(t, e.m.MarkIdle(back.ID))
		require.NoError(t, e.m.MarkBusy(busy))
		_, err = e.m.Release(t.Context(), released)
		require.NoError(t, err)
		require.NoError(t, e.m.Delete(t.Context(), "d"))
		require.NoError(t, e.m.Apply(t.Context(), spec("g", 1, req)))
		e.m.Close()

		e.m = e.manager(e.store)
		require.NoError(t, e.m.Reconcile(t.Context()))
		status := map[string]fleet.Status{}
		for _, in := range e.m.Instances("f") {
			status[in.ID] = in.Status
		}
		assert.Equal(t, fleet.StatusIdle, status[back.ID], "given back with MarkIdle before Close")
		assert.Equal(t, fleet.StatusBusy, status[busy], "marked busy before Close")
		assert.Equal(t, fleet.StatusTerminating, status[released], "released before Close")
		var names []string
		for _, s := range e.m.Fleets() {
			names = append(names, s.Name)
		}
		assert.Contains(t, names, "g", "applied before Close")
		_, err = e.m.Acquire(t.Context(), "d")
		assert.ErrorIs(t, err, fleet.ErrNotFound, "deleted before Close")
		got, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		assert.Equal(t, back.ID, got.ID, "the only idle node of f")
		require.True(t, e.runUntil(time.Hour, func() bool { return len(activeOf(e.m.Instances("g"))) == 1 }), "g not created")
	})
}
