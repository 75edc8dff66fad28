package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 17 (tester AJ): a restart that lost the Store finds a Vultr VM of
// its fleet late in the VM's hour; the fleet is not applied again. The
// orphan's Policy.OrphanGrace would end after the hour's last safe moment
// (the hour's end less the release margin) and defer its release to the
// next hour's: the orphan is released at the hour's last safe moment
// instead (a fleet applied later buys a new hour either way: a new server,
// or the orphan's next hour). Also with a grace (40 min) longer than what
// is left of the hour at a restart at minute 30.
//
// Expected: billed 1 h. Measured before the fix: 2 h (released at 1:56:59).
func TestOrphanGraceEndsAtTheHoursLastSafeMoment(t *testing.T) {
	for _, c := range []struct {
		at    time.Duration
		grace time.Duration
	}{{50 * time.Minute, 0}, {55 * time.Minute, 0}, {56*time.Minute + 30*time.Second, 0}, {30 * time.Minute, 40 * time.Minute}} {
		t.Run(fmt.Sprintf("restart at %v, OrphanGrace %v", c.at, c.grace), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newVultrWorld(t, fleet.Policy{OrphanGrace: c.grace}, fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute, Requirements: vultrType(vultrWorldPlan)})
				w.at(c.at)
				w.store = fleet.NewMemoryStore() // lost
				w.restart()
				ch := w.charge(w.id, 5*time.Hour)
				t.Logf("billed %v, released %v after the create", ch.Billed, ch.To.Sub(ch.From).Round(time.Second))
				assert.False(t, ch.Live, "still billing")
				assert.Equal(t, time.Hour, ch.Billed, "released %v after the create; $%.2f (%s)", ch.To.Sub(ch.From), ch.USD, ch.Description)
			})
		})
	}
}

// The same on Hot Aisle, whose listings give no start: an adopted VM's
// 30-minute minimum ends at the latest 30 min after it was first seen. An
// orphan found 3 minutes into its minimum by a restart that lost the Store,
// under an OrphanGrace (40 min) longer than the minimum, is released by the
// last safe moment of the latest minimum it can have (first seen plus 29
// min), not 40 minutes after it was found.
//
// Expected: billed at most 34 min (found by 4:00, released by 33:00).
// Measured before the fix: 44 min.
func TestOrphanGraceEndsAtTheLatestMinimumOfAnAdoptedHotAisleVM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle(sim.WithHotAisleBalance(1 << 40))
		hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
		run := func(store fleet.Store) (*fleet.Manager, func()) {
			m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{hp}, Store: store, Owner: "aj",
				Policy: fleet.Policy{OrphanGrace: 40 * time.Minute}})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- m.Run(ctx) }()
			return m, func() { cancel(); <-done; m.Close() }
		}
		m, stop := run(fleet.NewMemoryStore())
		require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute, Requirements: hotType("vm-mi300x-1")}))
		for len(h.Ledger().Charges) == 0 {
			time.Sleep(time.Second)
		}
		from := h.Ledger().Charges[0].From
		time.Sleep(time.Until(from.Add(3 * time.Minute)))
		stop()
		_, stop = run(fleet.NewMemoryStore()) // the Store is lost
		for limit := from.Add(3 * time.Hour); time.Now().Before(limit) && h.Ledger().Charges[0].Live; time.Sleep(10 * time.Second) {
		}
		stop()
		time.Sleep(time.Minute) // a VM DELETE blocks 20 s in the fake
		ch := h.Ledger().Charges[0]
		t.Logf("billed %v, released %v after the create", ch.Billed, ch.To.Sub(ch.From).Round(time.Second))
		assert.False(t, ch.Live, "still billing")
		assert.LessOrEqual(t, ch.Billed, 34*time.Minute, "released %v after the create; $%.2f", ch.To.Sub(ch.From).Round(time.Second), ch.USD)
	})
}

// A restart that lost the Store late in a Vultr VM's hour (52:00) starts
// with the wide margin (the Manager's first 30 minutes), whose last safe
// moment (50:00) has passed: the orphan still waits until the calm
// margin's (57:00), so the fleet applied again at 54:00 claims it rather
// than find it released at once and buy a new server.
func TestOrphanFoundInsideTheWideMarginWaitsToBeClaimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute, Requirements: vultrType(vultrWorldPlan)}
		w := newVultrWorld(t, fleet.Policy{}, spec)
		w.at(52 * time.Minute)
		w.store = fleet.NewMemoryStore() // lost
		w.restart()
		w.at(54 * time.Minute)
		require.NoError(t, w.m.Apply(t.Context(), spec))
		w.at(55 * time.Minute)
		in := w.m.Instances("f")
		require.Len(t, in, 1, "the orphan claimed, nothing new bought")
		assert.Equal(t, w.id, in[0].ID)
		assert.NotEqual(t, fleet.StatusTerminating, in[0].Status, "not released before the fleet could claim it")
		ch := w.charge(w.id, 5*time.Hour)
		assert.Equal(t, time.Hour, ch.Billed)
		assert.Len(t, w.v.Ledger().Charges, 1, "one server")
	})
}
