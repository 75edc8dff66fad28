package main

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpufleet/gpufleet/sim"
)

// Malformed admin inputs are refused with a pointer, as live=maybe
// and unknown routes are; they are not taken silently.
func TestAdminRefusesMisspeltKindsTrailingJSONAndUnknownServers(t *testing.T) {
	h := sim.NewHotAisle()
	srv := httptest.NewServer(withAdmin(h))
	defer srv.Close()
	tok := "Token " + sim.DefaultAPIKey
	status, data := adminDo(t, srv, "POST", "/api/teams/"+sim.DefaultTeam+"/virtual_machines/", tok, `{"gpus":[{"count":1}]}`)
	assert.Equal(t, 200, status, "%s", data)

	// A leak check that misspells the kind ("vm", "virtual_machines",
	//) sees [] and passes while a VM bills.
	for _, kind := range []string{"vm", "virtual_machines"} {
		status, data = adminDo(t, srv, "GET", "/_sim/resources?live=true&kind="+kind, "", "")
		assert.Equal(t, 400, status, "kind=%s: %s", kind, data)
	}
	// Trailing data after the fault object is not one fault.
	status, data = adminDo(t, srv, "POST", "/_sim/faults", "", `{"route":"*","status":500}{"route":"*"}`)
	assert.Equal(t, 400, status, "%s", data)
	// An out-of-band halt of a server that does not exist is a 404, not a 400.
	status, data = adminDo(t, srv, "POST", "/_sim/servers/nope/halt", "", "")
	assert.Equal(t, 404, status, "%s", data)
}
