package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
		`{"route": "*", "duration": "soon"}`, `{"route": "*", "colour": "red"}`, `not json`} {
		status, data = adminDo(t, srv, "POST", "/_sim/faults", "", bad)
		assert.Equal(t, 400, status, bad)
		assert.Contains(t, string(data), `"error"`, bad)
	}

	status, _ = adminDo(t, srv, "POST", "/_sim/faults", "", `{"route": "*", "status": 500, "duration": 60}`)
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
