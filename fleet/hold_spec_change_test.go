package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fleet's spec changed (instance type vm-mi300x-1 → vm-mi300x-2, Nodes 1)
// while its only node is held by the fixed re-buy hold (RebuySpares 1,
// RebuyHold 30 min; job to 35:00, Apply at 37:00). Apply's doc: changed
// requirements apply to instances created from then on. What a user can
// ask: the held node costs no more than its hold after its last job (the
// Acquire at 40:00 may hand it out, the job giving it back at 50:00: to
// 80:00), and at most one vm-mi300x-2 is bought. Holds on main; kept as a
// guard.
func TestSpecChangedWhileHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, x, from, stop := oneNodeAfterJob(t, fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute}, hotType("vm-mi300x-1"),
			5*time.Minute, 35*time.Minute, 37*time.Minute)
		defer stop()
		s := spec("a", 1, hotType("vm-mi300x-2"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		time.Sleep(time.Until(from.Add(40 * time.Minute)))
		y, err := e.m.Acquire(t.Context(), "a")
		t.Logf("Acquire at +40m: %s %s %v", y.ID, y.Offer.InstanceType, err)
		if err == nil {
			time.Sleep(time.Until(from.Add(50 * time.Minute)))
			require.NoError(t, e.m.GiveBack(y))
		}
		c := waitChargeEnds(e, x.ID, 6*time.Hour)
		time.Sleep(3 * time.Hour)
		all := servers(e.hot.Ledger().Charges)
		for _, ch := range all {
			t.Logf("%s: billed %v, to +%v, live %v (%s)", ch.ResourceID, ch.Billed, ch.To.Sub(from).Round(time.Second), ch.Live, ch.Description)
		}
		assert.LessOrEqual(t, c.Billed, 81*time.Minute, "old node kept past its hold")
		assert.LessOrEqual(t, len(all), 2)
	})
}

// A fleet lowered to Nodes 0 (not deleted) while its only node is held by
// the re-buy hold past its minimum (Hot Aisle VM, job to 35:00, Apply
// Nodes 0 at 40:00). The caller says it wants no node; its window is over,
// so the release policy lets it go now: gone by about 41:00, with a huge
// fixed hold (RebuySpares 1, RebuyHold 100 h) and with the default one.
// TestDeleteOfAnIdleNodesFleet checks the same for Delete. Holds on main;
// kept as a guard.
func TestLoweredToZeroWhileHeld(t *testing.T) {
	for _, c := range []struct {
		name string
		pol  fleet.Policy
	}{
		{"huge fixed hold", fleet.Policy{RebuySpares: 1, RebuyHold: 100 * time.Hour}},
		{"default hold", fleet.Policy{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, x, _, stop := oneNodeAfterJob(t, c.pol, hotType("vm-mi300x-1"), 5*time.Minute, 35*time.Minute, 40*time.Minute)
				defer stop()
				require.True(t, serverCharge(e, x.ID).Live, "released before the Apply")
				s := spec("a", 0, hotType("vm-mi300x-1"))
				s.IdleTimeout = 5 * time.Minute
				require.NoError(t, e.m.Apply(t.Context(), s))
				got := waitChargeEnds(e, x.ID, 200*time.Hour)
				t.Logf("%s: billed %v after Nodes 0 at 40:00, live %v", c.name, got.Billed, got.Live)
				assert.False(t, got.Live)
				assert.LessOrEqual(t, got.Billed, 41*time.Minute, "a fleet lowered to 0 kept its held node")
			})
		})
	}
}
