package fleet

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acquire's doc: "ErrNotFound for an unknown fleet or one whose Delete is
// recorded". Once the loop has carried the Delete out (the fleet's Hot
// Aisle nodes wait for the end of their minimum, so the fleet is still
// listed as deleting), Acquire must still answer ErrNotFound — an
// orchestrator reading ErrNoIdle grows the fleet with Apply, which a fleet
// being deleted refuses.
func TestAcquireAfterACarriedOutDeleteIsNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _, _ := twoIdleA(t)
		require.NoError(t, m.Delete(t.Context(), "f"))
		require.NoError(t, m.Reconcile(t.Context()))
		_, err := m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, ErrNotFound, "Delete recorded and carried out")
	})
}

// The calls on a fleet being deleted answer the same whether the loop has
// carried the Delete out or not: Acquire ErrNotFound, Apply an error,
// MarkBusy of its nodes an error (they are being released), MarkIdle of
// one released under its job nil (its release waits for the minimum's end:
// the job's end is taken), Release its time, nil.
func TestCallsOnADeletingFleetAnswerAlike(t *testing.T) {
	for _, carried := range []bool{false, true} {
		name := "queued"
		if carried {
			name = "carried out"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m, _, insts := twoIdleA(t)
				require.NoError(t, m.MarkBusy(insts[1].ID))
				passes(t, m, time.Minute)
				require.NoError(t, m.Delete(t.Context(), "f"))
				if carried {
					require.NoError(t, m.Reconcile(t.Context()))
					require.True(t, m.Fleets()[0].Name == "f", "still deleting")
				}
				_, err := m.Acquire(t.Context(), "f")
				assert.ErrorIs(t, err, ErrNotFound, "Acquire")
				assert.Error(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 3}), "Apply")
				assert.Error(t, m.MarkBusy(insts[0].ID), "MarkBusy of a node being released")
				// The busy node's release waits for its minimum's end: the
				// job's end is taken (GiveBack, MarkIdle), the release stands.
				assert.NoError(t, m.MarkIdle(insts[1].ID), "MarkIdle of a node whose release waits")
				_, err = m.Release(t.Context(), insts[0].ID)
				assert.NoError(t, err, "Release")
			})
		})
	}
}
