package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

func adminDo(t *testing.T, srv *httptest.Server, method, path, auth, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, data
}

func TestAdminAPIHotAisle(t *testing.T) {
	h := sim.NewHotAisle()
	srv := httptest.NewServer(withAdmin(h))
	defer srv.Close()
	tok := "Token " + sim.DefaultAPIKey
	vms := "/api/teams/" + sim.DefaultTeam + "/virtual_machines/"

	status, data := adminDo(t, srv, "GET", "/_sim/routes", "", "")
	require.Equal(t, 200, status)
	var routes []string
	require.NoError(t, json.Unmarshal(data, &routes))
	assert.Contains(t, routes, "POST /api/teams/{team}/virtual_machines/")

	status, data = adminDo(t, srv, "POST", vms, tok, `{"gpus":[{"count":1}]}`)
	require.Equal(t, 200, status, "%s", data)

	// A fault armed over HTTP hits the next matching call, in the fake's dialect.
	status, data = adminDo(t, srv, "POST", "/_sim/faults", "",
		`{"route": "GET /api/teams/{team}/virtual_machines/", "times": 1, "status": 503, "message": "busy", "duration": "20m"}`)
	require.Equal(t, 201, status, "%s", data)
	assert.Contains(t, string(data), `"Duration": "20m0s"`)
	status, data = adminDo(t, srv, "GET", vms, tok, "")
	assert.Equal(t, 503, status)
	assert.Equal(t, `"busy"`, strings.TrimSpace(string(data)))
	status, _ = adminDo(t, srv, "GET", vms, tok, "")
	assert.Equal(t, 200, status, "Times: 1 used up")

	for _, bad := range []string{`{"route": "GET /nope"}`, `{"times": 1}`, `{"route": "*", "status": 302}`,
		`{"route": "*", "duration": "soon"}`, `{"route": "*", "duration": 60}`, `{"route": "*", "colour": "red"}`,
		`not json`} {
		status, data = adminDo(t, srv, "POST", "/_sim/faults", "", bad)
		assert.Equal(t, 400, status, bad)
		assert.Contains(t, string(data), `"error"`, bad)
		assert.NotContains(t, string(data), "Routes lists", "no Go names in admin errors")
	}
	_, data = adminDo(t, srv, "POST", "/_sim/faults", "", `{"route": "GET /nope"}`)
	assert.Contains(t, string(data), "GET /_sim/routes")

	status, _ = adminDo(t, srv, "POST", "/_sim/faults", "", `{"route": "*", "status": 500, "duration": "60s"}`)
	require.Equal(t, 201, status)
	status, _ = adminDo(t, srv, "GET", "/api/user/", tok, "")
	assert.Equal(t, 500, status)
	status, _ = adminDo(t, srv, "DELETE", "/_sim/faults", "", "")
	assert.Equal(t, 204, status)
	status, _ = adminDo(t, srv, "GET", "/api/user/", tok, "")
	assert.Equal(t, 200, status)

	status, data = adminDo(t, srv, "GET", "/_sim/snapshot", "", "")
	require.Equal(t, 200, status)
	var snap sim.Snapshot
	require.NoError(t, json.Unmarshal(data, &snap))
	require.Len(t, snap.Resources, 1)
	assert.Equal(t, "virtual_machine", snap.Resources[0].Kind)
	assert.Len(t, snap.Ledger.Charges, 1)
	assert.NotEmpty(t, snap.Calls)
	for _, p := range []string{"/_sim/resources", "/_sim/calls", "/_sim/ledger"} {
		status, data = adminDo(t, srv, "GET", p, "", "")
		assert.Equal(t, 200, status, p)
		assert.True(t, json.Valid(data), p)
	}

	status, _ = adminDo(t, srv, "POST", "/_sim/reset", "", "")
	assert.Equal(t, 204, status)
	assert.Empty(t, h.Resources())
	status, data = adminDo(t, srv, "GET", "/_sim/nope", "", "")
	assert.Equal(t, 404, status)
	assert.Contains(t, string(data), `"error"`)
	status, _ = adminDo(t, srv, "GET", "/_sim/snapshot", "", "")
	assert.Equal(t, 200, status, "the admin API needs no key")
}

func TestAdminAPIVultr(t *testing.T) {
	v := sim.NewVultr()
	srv := httptest.NewServer(withAdmin(v))
	defer srv.Close()
	status, data := adminDo(t, srv, "POST", "/_sim/faults", "", `{"route": "GET /v2/regions", "status": 500, "times": 1}`)
	require.Equal(t, 201, status, "%s", data)
	status, data = adminDo(t, srv, "GET", "/v2/regions", "", "")
	assert.Equal(t, 500, status)
	assert.Contains(t, string(data), `"status":500`)
	status, _ = adminDo(t, srv, "GET", "/v2/regions", "", "")
	assert.Equal(t, 200, status)
	status, _ = adminDo(t, srv, "POST", "/_sim/reset", "", "")
	assert.Equal(t, 204, status)
	status, data = adminDo(t, srv, "GET", "/_sim/snapshot", "", "")
	assert.Equal(t, 200, status)
	var snap sim.Snapshot
	require.NoError(t, json.Unmarshal(data, &snap))
	assert.Empty(t, snap.Calls)
}

// GET /_sim/faults lists armed and fired faults and chaos mode; durations
// are Go duration strings everywhere, a live resource's Deleted is null.
func TestAdminFaultsChaosAndFormats(t *testing.T) {
	v := sim.NewVultr(sim.WithVultrRateLimit(0, 0))
	srv := httptest.NewServer(withAdmin(v))
	defer srv.Close()
	tok := "Bearer " + sim.DefaultAPIKey
	status, data := adminDo(t, srv, "POST", "/_sim/faults", "",
		`{"route": "GET /v2/regions", "times": 1, "latency": "1ms", "status": 503}`)
	require.Equal(t, 201, status, "%s", data)
	var armed map[string]any
	require.NoError(t, json.Unmarshal(data, &armed))
	assert.Equal(t, "1ms", armed["Latency"])
	assert.Equal(t, "0s", armed["Duration"])
	status, _ = adminDo(t, srv, "GET", "/v2/regions", "", "")
	assert.Equal(t, 503, status)
	adminDo(t, srv, "POST", "/_sim/faults", "", `{"route": "*", "cutafter": 4, "duration": "1h"}`)

	status, data = adminDo(t, srv, "GET", "/_sim/faults", "", "")
	require.Equal(t, 200, status)
	var faults struct {
		Armed []map[string]any
		Fired []map[string]any
		Chaos any
	}
	require.NoError(t, json.Unmarshal(data, &faults))
	require.Len(t, faults.Armed, 1)
	assert.EqualValues(t, 4, faults.Armed[0]["CutAfter"])
	require.Len(t, faults.Fired, 2)
	assert.Equal(t, "latency", faults.Fired[0]["Kind"])
	assert.Equal(t, "1ms", faults.Fired[0]["Delay"])
	assert.Equal(t, "status", faults.Fired[1]["Kind"])
	assert.Nil(t, faults.Chaos)
	adminDo(t, srv, "DELETE", "/_sim/faults", "", "")

	status, data = adminDo(t, srv, "POST", "/_sim/chaos", "", `{"profile": "bad-day", "seed": 9}`)
	require.Equal(t, 201, status, "%s", data)
	assert.Contains(t, string(data), `"Lag": "30s"`)
	status, data = adminDo(t, srv, "POST", "/_sim/chaos", "", `{"profile": "sunny"}`)
	assert.Equal(t, 400, status)
	assert.Contains(t, string(data), "bad-day")
	_, data = adminDo(t, srv, "GET", "/_sim/faults", "", "")
	assert.Contains(t, string(data), `"Profile": "bad-day"`)
	status, _ = adminDo(t, srv, "DELETE", "/_sim/chaos", "", "")
	assert.Equal(t, 204, status)
	_, on := chaosOn(v)
	assert.False(t, on)

	status, data = adminDo(t, srv, "POST", "/v2/instances", tok, `{"region":"ewr","plan":"vc2-1c-1gb","os_id":1743}`)
	require.Equal(t, 202, status, "%s", data)
	_, data = adminDo(t, srv, "GET", "/_sim/ledger", "", "")
	assert.Contains(t, string(data), `"Billed": "1h0m0s"`)
	_, data = adminDo(t, srv, "GET", "/_sim/resources?kind=instance&live=true", "", "")
	assert.Contains(t, string(data), `"Deleted": null`)
	var rs []sim.Resource
	require.NoError(t, json.Unmarshal(data, &rs))
	require.Len(t, rs, 1)
	assert.True(t, rs[0].Live())
	_, data = adminDo(t, srv, "GET", "/_sim/resources?kind=vpc", "", "")
	assert.Equal(t, "[]", strings.TrimSpace(string(data)))
	status, _ = adminDo(t, srv, "GET", "/_sim/resources?live=maybe", "", "")
	assert.Equal(t, 400, status)

	status, data = adminDo(t, srv, "GET", "/_sim/", "", "")
	assert.Equal(t, 200, status)
	assert.Contains(t, string(data), "/_sim/servers/{id}/halt")
	assert.Contains(t, string(data), "?kind=&live=", "no HTML escaping")
}

func chaosOn(f fake) (uint64, bool) {
	seed, _, on := f.Chaos()
	return seed, on
}

// The out-of-band operations over the admin API, on both fakes.
func TestAdminOutOfBand(t *testing.T) {
	v := sim.NewVultr(sim.WithVultrRateLimit(0, 0))
	srv := httptest.NewServer(withAdmin(v))
	defer srv.Close()
	id, err := v.SeedServer(sim.VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Label: "a", Age: time.Hour})
	require.NoError(t, err)
	tok := "Bearer " + sim.DefaultAPIKey
	status, data := adminDo(t, srv, "POST", "/_sim/servers/"+id+"/halt", "", "")
	require.Equal(t, 204, status, "%s", data)
	_, data = adminDo(t, srv, "GET", "/v2/instances/"+id, tok, "")
	assert.Contains(t, string(data), `"power_status":"stopped"`)
	status, _ = adminDo(t, srv, "POST", "/_sim/servers/"+id+"/relabel", "", `{"label": "b", "tags": ["x"]}`)
	require.Equal(t, 204, status)
	_, data = adminDo(t, srv, "GET", "/v2/instances/"+id, tok, "")
	assert.Contains(t, string(data), `"label":"b"`)
	status, data = adminDo(t, srv, "POST", "/_sim/servers/"+id+"/destroy", "", `{"answer": "gone"}`)
	assert.Equal(t, 400, status)
	assert.Contains(t, string(data), "invalid-id")
	status, _ = adminDo(t, srv, "POST", "/_sim/servers/"+id+"/destroy", "", `{"answer": "invalid-id"}`)
	require.Equal(t, 204, status)
	status, data = adminDo(t, srv, "GET", "/v2/instances/"+id, tok, "")
	assert.Equal(t, 400, status)
	assert.Contains(t, string(data), "invalid instance ID")
	status, _ = adminDo(t, srv, "POST", "/_sim/servers/nope/halt", "", "")
	assert.Equal(t, 404, status, "no such server")
	status, _ = adminDo(t, srv, "POST", "/_sim/servers/"+id+"/explode", "", "")
	assert.Equal(t, 400, status)
	status, _ = adminDo(t, srv, "POST", "/_sim/ip-reuse", "", `{"on": true}`)
	assert.Equal(t, 204, status)

	h := sim.NewHotAisle(sim.WithHotAisleDeleteDelay(0))
	hs := httptest.NewServer(withAdmin(h))
	defer hs.Close()
	htok := "Token " + sim.DefaultAPIKey
	vms := "/api/teams/" + sim.DefaultTeam + "/virtual_machines/"
	_, data = adminDo(t, hs, "POST", vms, htok, `{"gpus":[{"count":1}]}`)
	var vm struct{ Name string }
	require.NoError(t, json.Unmarshal(data, &vm))
	status, _ = adminDo(t, hs, "POST", "/_sim/servers/"+vm.Name+"/relabel", "", `{"description": "theirs"}`)
	require.Equal(t, 204, status)
	status, _ = adminDo(t, hs, "POST", "/_sim/servers/"+vm.Name+"/halt", "", "")
	require.Equal(t, 204, status)
	_, data = adminDo(t, hs, "GET", vms+vm.Name+"/state/", htok, "")
	assert.Contains(t, string(data), "shut off")
	status, _ = adminDo(t, hs, "POST", "/_sim/servers/"+vm.Name+"/destroy", "", `{"answer": "invalid-id"}`)
	assert.Equal(t, 400, status, "Hot Aisle has only 404")
	status, _ = adminDo(t, hs, "POST", "/_sim/servers/"+vm.Name+"/destroy", "", "")
	require.Equal(t, 204, status)
	status, _ = adminDo(t, hs, "GET", vms+vm.Name+"/", htok, "")
	assert.Equal(t, 404, status)
}
