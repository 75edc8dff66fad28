package sim_test

import (
	"errors"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

func TestHotAisleInjectFault(t *testing.T) {
	x := haNew(t)
	require.Error(t, x.h.Inject(sim.Fault{Route: "GET /api/teams/{team}/virtual_machines"}), "no trailing slash: not a route")
	require.Error(t, x.h.Inject(sim.Fault{Route: "POST /v2/instances"}))
	require.NoError(t, x.h.Inject(sim.Fault{Route: "POST /api/teams/{team}/virtual_machines/", Times: 1,
		Status: 500, AfterCommit: true}))
	x.fail("POST", haTeamPath+"virtual_machines/", haGPUSpec(1), 500, "Internal Server Error")
	var list []haVM
	x.ok("GET", haTeamPath+"virtual_machines/", nil, 200, &list)
	assert.Len(t, list, 1, "the create took effect before the 500")
	x.provision(1) // Times: 1 is used up

	require.NoError(t, x.h.Inject(sim.Fault{Route: "DELETE /api/teams/{team}/virtual_machines/{vm}/", Times: 2,
		Status: 502, Message: "Bad Gateway"}))
	x.fail("DELETE", haTeamPath+"virtual_machines/"+list[0].Name+"/?force=true", nil, 502, "Bad Gateway")
	calls := x.h.Calls()
	last := calls[len(calls)-1]
	assert.True(t, last.Fault)
	assert.Equal(t, "DELETE /api/teams/{team}/virtual_machines/{vm}/", last.Route)
	assert.Equal(t, 502, last.Status)
	x.h.ClearFaults()
	x.ok("GET", haTeamPath+"virtual_machines/"+list[0].Name+"/", nil, 200, nil)
}

// Scenario S05: the cloud is unreachable (resets and 503s) for 20 minutes.
func TestHotAisleOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		x.h.Outage(20 * time.Minute)
		req, err := http.NewRequest("GET", haBase+"/api/user/", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Token "+sim.DefaultAPIKey)
		_, err = x.c.Do(req)
		require.Error(t, err)
		assert.True(t, errors.Is(err, syscall.ECONNRESET), "%v", err)
		x.fail("GET", "/api/user/", nil, 503, "Service Unavailable")
		time.Sleep(20 * time.Minute)
		x.ok("GET", "/api/user/", nil, 200, nil)
	})
}

// SlowSSH, SetMinimumReservation and SetDeleteDelay change the physics of
// servers assigned afterwards.
func TestHotAisleAdjustablePhysics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t, sim.WithHotAisleDeleteDelay(time.Minute), sim.WithHotAisleLimits(1, 0))
		require.NoError(t, x.h.SetMinimumReservation("vm-mi300x-1", 5))
		require.Error(t, x.h.SetMinimumReservation("nope", 5))
		var rows []haRow
		x.ok("GET", haTeamPath+"virtual_machines/available/", nil, 200, &rows)
		assert.Equal(t, int64(5), rows[0].MinimumReservationMinutes)
		vm := x.provision(1)
		x.fail("POST", haTeamPath+"bare_metal/", map[string]any{"specs": map[string]any{"cpu_cores": 104}},
			403, "tenant limit exceeded")
		time.Sleep(5 * time.Minute)
		start := time.Now()
		x.ok("DELETE", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 204, nil)
		assert.Equal(t, time.Minute, time.Since(start))
		x.h.SetDeleteDelay(0)
		vm = x.provision(1)
		time.Sleep(5 * time.Minute)
		start = time.Now()
		x.ok("DELETE", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 204, nil)
		assert.Zero(t, time.Since(start))
	})
}

// DeleteOutOfBand (scenario S04): the VM disappears, the API says 404, the
// ledger closes, no minimum check.
func TestHotAisleDeleteOutOfBand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		vm := x.provision(1)
		time.Sleep(2 * time.Minute)
		require.NoError(t, x.h.DeleteOutOfBand(vm.Name))
		require.Error(t, x.h.DeleteOutOfBand(vm.Name))
		x.fail("DELETE", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 404, "Not Found: Resource not found")
		c := haCharge(t, x.h, vm.Name)
		assert.False(t, c.Live)
		assert.Equal(t, 30*time.Minute, c.Billed)
		assert.Zero(t, c.Unrefunded)
	})
}
