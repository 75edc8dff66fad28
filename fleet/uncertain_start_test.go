package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// uncertainCreateBehindOutage makes the fleet's one create commit and
// answer 500 while the provider's listings fail for 40 minutes (503), so
// that neither the provider's own recovery nor the Manager's lookups can
// find the instance before; it returns the fleet's record once a listing
// found it (its start then lies between the create's plan and that
// listing).
func uncertainCreateBehindOutage(e *env, cloud string) fleet.InstanceRecord {
	t := e.t
	t.Helper()
	e.run(2 * time.Minute) // the first listings: the provider has listed once
	var fake interface{ Inject(sim.Fault) error } = e.hot
	create, list, req := hotCreate, "GET /api/teams/{team}/virtual_machines/", hotType("vm-mi300x-2")
	if cloud == "vultr" {
		fake, create, list, req = e.vultr, vultrCreate, "GET /v2/instances", vultrVM("ewr")
	}
	require.NoError(t, fake.Inject(sim.Fault{Route: create, Times: 1, Status: 500, AfterCommit: true}))
	require.NoError(t, fake.Inject(sim.Fault{Route: list, Status: 503, Duration: 40 * time.Minute}))
	require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, req)))
	var found fleet.InstanceRecord
	require.True(t, e.runUntil(2*time.Hour, func() bool {
		for _, r := range e.m.Records() {
			if r.Instance.Fleet == "f" && r.Instance.ID != "" {
				found = r
				return true
			}
		}
		return false
	}))
	return found
}

// A Hot Aisle VM (2x: 60-minute minimum) whose create committed and
// answered 500 is hidden by a 40-minute outage and found unlabelled after
// it. Hot Aisle gives no creation time: its start is bounded by the plan
// and the finding listing (CreatedLatest), and the fleet, deleted at once,
// releases it at the earliest bound's minimum end, retried unforced while
// Hot Aisle refuses: it is billed its minimum (60 min, within a retry
// minute), not the 40 minutes it hid plus a minimum counted from the
// finding (about 100 minutes before the bounds).
func TestUncertainHotAisleCreateAfterListOutageBillsItsMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		r := uncertainCreateBehindOutage(e, "hotaisle")
		start := r.Instance.History[0].Time // the plan
		t.Logf("found at +%s: Created +%s, CreatedLatest +%s", time.Since(start), r.Instance.Created.Sub(start), r.CreatedLatest.Sub(start))
		assert.False(t, r.CreatedLatest.IsZero(), "the finding listing is the latest start")
		assert.GreaterOrEqual(t, r.CreatedLatest.Sub(start), 40*time.Minute)
		assert.Less(t, r.Instance.Created.Sub(start), time.Minute, "no listing showed nothing before the outage: the plan is the earliest start")
		require.NoError(t, e.m.Delete(t.Context(), "f"))
		require.True(t, e.runUntil(3*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		e.assertNothingLeft()
		l := e.hot.Ledger()
		require.Len(t, l.Charges, 1)
		c := l.Charges[0]
		t.Logf("billed %s, $%.2f (%s); forced releases %d", c.Billed, c.USD, c.Description, e.count(fleet.EventReleaseForced))
		assert.LessOrEqual(t, c.Billed, 61*time.Minute, "its 60-minute minimum, within a retry minute")
		assert.Zero(t, c.Unrefunded, "released after its minimum, unforced")
	})
}

// Vultr gives date_created: a create found by label after a 40-minute
// outage keeps the provider's creation time (no bounds), so that its billed
// hours are counted from it.
func TestUncertainVultrCreateKeepsItsCreationTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		r := uncertainCreateBehindOutage(e, "vultr")
		var made time.Time
		for _, res := range e.vultr.Resources() {
			if res.ID == r.Instance.ID {
				made = res.Created
			}
		}
		require.False(t, made.IsZero())
		t.Logf("made %s, recorded Created %s, CreatedLatest %s", made.Format(time.TimeOnly), r.Instance.Created.Format(time.TimeOnly), r.CreatedLatest)
		assert.WithinDuration(t, made, r.Instance.Created, time.Second, "Vultr's date_created")
		assert.True(t, r.CreatedLatest.IsZero(), "a start the provider gives is not bounded")
	})
}
