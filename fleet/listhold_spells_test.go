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

// A key revoked, fixed, then revoked again raises one CreatesRefused alert
// per spell (tester AH: the second was silent, and creates stayed held up
// to an hour after the key was fixed): a successful listing ends the spell
// and lifts the hold.
func TestEachKeyRevocationAlertsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: sim.AnyRoute, Status: 401, Message: "Unauthorized IP address: 192.0.2.7", Duration: 5 * time.Minute}))
		require.NoError(t, e.m.Apply(t.Context(), spec("infer", 1, fleet.Requirements{GPUModel: "MI300X", GPUCount: 1})))
		stop := e.running()
		time.Sleep(30 * time.Minute)
		first := e.count(fleet.EventCreatesRefused)
		okLists := calls(e.vultr.Calls(), "GET /v2/instances", 200)
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: sim.AnyRoute, Status: 401, Message: "Invalid API token.", Duration: 20 * time.Minute}))
		time.Sleep(25 * time.Minute)
		stop()
		t.Logf("alerts after spell 1: %d; Vultr listings answered 200 in between: %d; 401 answers in all: %d; alerts after spell 2: %d",
			first, okLists, calls(e.vultr.Calls(), "GET /v2/instances", 401), e.count(fleet.EventCreatesRefused))
		assert.Equal(t, 1, first)
		assert.Equal(t, 2, e.count(fleet.EventCreatesRefused), "one alert per refusal spell")
	})
}
