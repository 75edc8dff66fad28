package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hotLabel = "PATCH /api/teams/{team}/virtual_machines/{vm}/"

// ownHotProvider is a Hot Aisle provider of its own (another process's),
// on the env's fake team.
func (e *env) ownHotProvider() *hotaisle.Provider {
	return hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(e.hot.Client())))
}

// Issue 10 point 2: two Managers with different owners in one account,
// using the same fleet names, never touch each other's machines. Here
// Manager X (owner "xa") has a Hot Aisle create that failed ambiguously
// (502 before anything was created) and is being looked up; meanwhile
// Manager Y (owner "yb", same team, its own process) creates a VM of the
// same type whose label PATCH fails for a few minutes (Hot Aisle takes no
// label at create). X must not take Y's VM for its uncertain create: when
// X's fleet is deleted, Y's VM must still be running and still Y's.
func TestUncertainCreateDoesNotTakeAnotherOwnersUnlabelledVM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow, OrphanGrace: time.Minute})
		x := e.managerWith(fleet.Config{Providers: []fleet.Provider{e.ownHotProvider()}, Owner: "xa"})
		y := e.managerWith(fleet.Config{Providers: []fleet.Provider{e.ownHotProvider()}, Owner: "yb"})
		step := func(d time.Duration) {
			for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Second) {
				require.NoError(t, x.Reconcile(t.Context()))
				require.NoError(t, y.Reconcile(t.Context()))
			}
		}
		step(time.Minute) // both have listed the team once
		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotCreate, Status: 502, Times: 1}))
		require.NoError(t, x.Apply(t.Context(), spec("f", 1, hotType("vm-mi300x-1"))))
		step(30 * time.Second)
		require.Positive(t, e.count(fleet.EventCreateUncertain), "X's create is uncertain")
		require.Zero(t, liveOf(e, "hotaisle"), "X's create made nothing")

		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotLabel, Status: 500, Duration: 4 * time.Minute}))
		require.NoError(t, y.Apply(t.Context(), spec("f", 1, hotType("vm-mi300x-1"))))
		step(30 * time.Minute)
		ys := activeOf(y.Instances("f"))
		require.Len(t, ys, 1, "Y has its one VM")
		yID := ys[0].ID

		require.NoError(t, x.Delete(t.Context(), "f"))
		step(2 * time.Hour)
		var still bool
		for _, r := range e.hot.Resources() {
			if r.ID == yID {
				still = r.Live()
				assert.Contains(t, r.Description, ".yb.f.", "Y's VM carries Y's label")
			}
		}
		assert.True(t, still, "X's Delete released Y's VM %s (X took it for its uncertain create); X's instances: %+v", yID, x.Instances("f"))
		assert.Len(t, activeOf(y.Instances("f")), 1, "Y's fleet still has its VM")
	})
}
