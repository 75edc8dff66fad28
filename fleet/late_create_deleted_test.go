package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Hot Aisle create whose answer is lost (the call outlives CreateTimeout;
// the VM lands 20 minutes after the call, unlabelled: the label call never
// ran) is given up about 10 minutes in; the fleet was deleted at +1 min.
// The fleet must stay (deleting) in Fleets() while the given-up create's
// VM may still land (lateCreateWindow), find it, and release it: a caller
// that stops the Manager once Fleets() is empty leaves nothing billing,
// and the VM is billed its minimum (30 min for a 1x VM), not more.
func TestDeletedFleetWaitsForAGivenUpCreateThatMayLand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.slowCreates("hotaisle", 20*time.Minute, 1)
		start := time.Now()
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, hotType("vm-mi300x-1"))))
		e.run(time.Minute)
		require.NoError(t, e.m.Delete(t.Context(), "f"))
		require.True(t, e.runUntil(3*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		forgotten := time.Since(start)
		e.m.Close() // the caller stops once the fleet is gone
		time.Sleep(2 * time.Hour)
		vms := e.hot.Resources()
		t.Logf("fleet forgotten at +%s; VMs made %d, unresolved %d, adopted %d", forgotten, len(vms),
			e.count(fleet.EventCreateUnresolved), e.count(fleet.EventInstanceAdopted))
		require.Len(t, vms, 1, "the slow create made one VM")
		assert.Greater(t, forgotten, 20*time.Minute, "the fleet outlived its given-up create's landing")
		e.assertNothingLeft()
		for _, c := range e.hot.Ledger().Charges {
			t.Logf("%s billed %s (%s)", c.ResourceID, c.Billed, c.Description)
			assert.LessOrEqual(t, c.Billed, 31*time.Minute, "billed its 30-minute minimum, within a retry minute")
		}
	})
}

// The same on Vultr, where the late VM lands under its label (the label is
// in the create call): the deleted fleet waits for it and releases it,
// billed its first hour.
func TestDeletedFleetWaitsForAGivenUpVultrCreateThatMayLand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.slowCreates("vultr", 20*time.Minute, 1)
		start := time.Now()
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, vultrVM("ewr"))))
		e.run(time.Minute)
		require.NoError(t, e.m.Delete(t.Context(), "f"))
		require.True(t, e.runUntil(3*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		forgotten := time.Since(start)
		e.m.Close()
		time.Sleep(2 * time.Hour)
		t.Logf("fleet forgotten at +%s; servers made %d", forgotten, len(e.vultr.Resources()))
		require.Len(t, e.vultr.Resources(), 1, "the slow create made one VM")
		assert.Greater(t, forgotten, 20*time.Minute, "the fleet outlived its given-up create's landing")
		e.assertNothingLeft()
		for _, c := range e.vultr.Ledger().Charges {
			t.Logf("%s billed %s (%s)", c.ResourceID, c.Billed, c.Description)
			assert.LessOrEqual(t, c.Billed, time.Hour, "its first hour")
		}
	})
}
