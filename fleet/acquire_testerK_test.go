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
func TestTesterKAcquireAfterACarriedOutDeleteIsNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _, _ := twoIdleA(t)
		require.NoError(t, m.Delete(t.Context(), "f"))
		require.NoError(t, m.Reconcile(t.Context()))
		_, err := m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, ErrNotFound, "Delete recorded and carried out")
	})
}

// "Release/MarkIdle give it back" (acceptance 3): an orchestrator whose
// job ended calls MarkIdle and at once Acquire for its next job. The node
// it just gave back is the fleet's only idle node; Acquire must hand it
// out. Got ErrNoIdle until the loop has taken the idle mark: the
// orchestrator grows the fleet and buys a new node (a new minimum on Hot
// Aisle) while a paid one is idle.
func TestTesterKAcquireRightAfterMarkIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _, _ := twoIdleA(t)
		a, err := m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		b, err := m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		passes(t, m, 5*time.Minute)
		require.NoError(t, m.MarkIdle(a.ID))
		got, err := m.Acquire(t.Context(), "f")
		assert.NoError(t, err, "the node given back with MarkIdle (%s) is idle; %s is busy", a.ID, b.ID)
		assert.Equal(t, a.ID, got.ID)
	})
}
