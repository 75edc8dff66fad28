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

// A scale-down Apply recorded just before or after Acquire: the node
// Acquire handed out must not be the one the shrink releases.
func TestTesterKAcquireRacingScaleDown(t *testing.T) {
	for _, first := range []string{"apply", "acquire"} {
		t.Run(first, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m, _, _ := twoIdleA(t)
				var got Instance
				var err error
				if first == "acquire" {
					got, err = m.Acquire(t.Context(), "f")
					require.NoError(t, err)
				}
				require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute}))
				if first == "apply" {
					got, err = m.Acquire(t.Context(), "f")
					require.NoError(t, err)
				}
				require.NoError(t, m.Reconcile(t.Context()))
				for _, in := range m.Instances("f") {
					if in.ID == got.ID {
						assert.Equal(t, StatusBusy, in.Status)
					} else {
						assert.Equal(t, StatusTerminating, in.Status)
					}
				}
			})
		})
	}
}

// Acquire's order on an hourly offer: the node with the most paid time
// left in its billed hour (the younger one here, 10 minutes into its
// hour, over one 40 minutes in); on per-minute billing the one inside its
// minimum over one past it.
func TestTesterKAcquireOrder(t *testing.T) {
	for _, hourly := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			o := vmOffer("vultr", 1, 30*time.Minute)
			if hourly {
				o.MinimumReservation, o.BillingGranularity = time.Hour, time.Hour
			}
			p := newFakeProvider("vultr", o)
			m, _ := newTestManager(t, Config{Providers: []Provider{p}})
			require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1, IdleTimeout: time.Hour}))
			passes(t, m, 30*time.Minute)
			require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 2, IdleTimeout: time.Hour}))
			passes(t, m, 10*time.Minute)
			insts := m.Instances("f")
			require.Len(t, insts, 2)
			young := insts[0]
			if insts[1].Created.After(young.Created) {
				young = insts[1]
			}
			got, err := m.Acquire(t.Context(), "f")
			require.NoError(t, err)
			assert.Equal(t, young.ID, got.ID, "hourly=%v", hourly)
		})
	}
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
