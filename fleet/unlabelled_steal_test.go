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

// Found by TestCrashSchedules seed 12467 (default Policy, GPUFLEET_SCHEDULES
// ≥ 12467; one run in a few): fleet f1's Hot Aisle creates were given up
// (503 before commit: they made nothing), f1 was deleted, then fleet f2's
// create of the same type committed a VM whose label write failed; a
// listing applied before f2's create answer showed the VM unlabelled, the
// Manager took it for f1's given-up create, labelled it f1 and released it
// with f1; f2's own create was then "answered with a VM another create
// holds" and looked up for 5 minutes before a new create.
//
// The kind: a Hot Aisle VM is labelled by a second call after its
// provision, so a listing can show the VM of a create under way unlabelled;
// the pairing of new unlabelled VMs with uncertain or given-up creates of
// the same type ("no more candidates than creates") does not count the
// creates under way as possible makers, so it hands that VM to another
// create. When that create's fleet no longer wants it, the VM is released:
// one server (and its 30-minute minimum) bought for nothing, and the fleet
// that made it waits CreateLookupGrace and creates again.
//
// Here, with the default Policy and Run: fleet c's create answers 503 (it
// made nothing) and c is deleted while the create is uncertain; fleet b's
// create commits a VM whose label write answers 3 minutes late. Expected
// (issue 10: nothing is created twice however calls interleave; a create
// is never retried blindly): b keeps its VM; one VM created. Got: c takes
// b's VM and releases it, b creates a second.
func TestUnlabelledVMOfACreateUnderWayIsNotTakenByAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		ctx := t.Context()
		stop := e.running()
		defer stop()
		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotCreate, Status: 503, Times: 1}))
		require.NoError(t, e.m.Apply(ctx, spec("c", 1, hotType("vm-mi300x-1"))))
		require.True(t, waitFor(time.Minute, func() bool { return e.count(fleet.EventCreateUncertain) == 1 }))
		require.NoError(t, e.m.Delete(ctx, "c", fleet.WithReleasePolicy(fleet.ReleaseNow)))

		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotLabel, Latency: 3 * time.Minute, Times: 1}))
		require.NoError(t, e.m.Apply(ctx, spec("b", 1, hotType("vm-mi300x-1"))))
		time.Sleep(20 * time.Minute)

		assert.Equal(t, 1, calls(e.hot.Calls(), hotCreate, 200), "VMs created for one wanted node; adoptions: %v",
			e.eventsOf(fleet.EventInstanceAdopted))
		assert.Zero(t, calls(e.hot.Calls(), "DELETE /api/teams/{team}/virtual_machines/{vm}/", 0),
			"b's VM was released as the deleted fleet c's: %v", e.eventsOf(fleet.EventReleaseRequested))
	})
}
