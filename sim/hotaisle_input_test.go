package sim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

// Bad input gets a Hot Aisle error (a JSON string), never a panic.
func TestHotAisleBadInput(t *testing.T) {
	x := haNew(t)
	vm := x.provision(1)
	vmPath := haTeamPath + "virtual_machines/"
	const bad, unproc = "Bad Request: Invalid input", "Unprocessable Entity: Invalid data format"
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		msg          string
	}{
		{"POST", vmPath, "", 400, bad},
		{"POST", vmPath, "{", 400, bad},
		{"POST", vmPath, "[1,2]", 422, unproc},
		{"POST", vmPath, "null", 400, bad},
		{"POST", vmPath, "{}", 400, bad},
		{"POST", vmPath, `{"cpu_cores": "13"}`, 422, unproc},
		{"POST", vmPath, `{"cpu_cores": -1}`, 422, unproc},
		{"POST", vmPath, `{"cpus": [{"count": 1}]}`, 422, unproc}, // an array where the VM spec says object
		{"POST", vmPath, `{"gpus": {"count": 1}}`, 422, unproc},
		{"POST", vmPath, `{"gpus": [{"count": 1}]} trailing`, 400, bad},
		{"POST", vmPath, `{"unknown": 1, "gpus": [{"count": 1, "model": "MI300X"}]}`, 200, ""},
		{"PATCH", vmPath + vm.Name + "/", `{"description": 5}`, 422, unproc},
		{"PATCH", vmPath + vm.Name + "/", `not json`, 400, bad},
		{"PATCH", haTeamPath + "bare_metal/enc1-gpu999/", `{}`, 404, "Not Found: Resource not found"},
		{"POST", haTeamPath + "bare_metal/", `{"specs": 1}`, 422, unproc},
		{"POST", "/api/user/ssh_keys/", `{"authorized_key": ["a"]}`, 422, unproc},
		{"POST", "/api/user/ssh_keys/", `]`, 400, bad},
	} {
		resp, data := x.req(c.method, c.path, "Token "+sim.DefaultAPIKey, c.body)
		assert.Equal(t, c.status, resp.StatusCode, "%s %s %v: %s", c.method, c.path, c.body, data)
		if c.msg != "" {
			assert.Equal(t, c.msg, haMsg(t, data), "%s %s %v", c.method, c.path, c.body)
		}
	}
}

// A body over 1 MiB is refused with 413 in the Hot Aisle dialect.
func TestHotAisleBodyTooLarge(t *testing.T) {
	x := haNew(t)
	big := `{"description": "` + strings.Repeat("x", sim.MaxBodyBytes) + `"}`
	x.fail("POST", haTeamPath+"bare_metal/", big, 413, "Request Entity Too Large")
	x.fail("POST", "/api/user/ssh_keys/", big, 413, "Request Entity Too Large")
	// Over real HTTP too.
	srv := httptest.NewServer(x.h)
	defer srv.Close()
	req, err := http.NewRequest("POST", srv.URL+haTeamPath+"virtual_machines/", strings.NewReader(big))
	require.NoError(t, err)
	req.Header.Set("Authorization", sim.DefaultAPIKey)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 413, resp.StatusCode)
}

// FuzzHotAisleDecoders sends arbitrary bodies to every route that decodes
// one. The seeds run in the normal test run. The answer must be a documented
// status with a JSON body (a JSON string for an error), never a panic.
func FuzzHotAisleDecoders(f *testing.F) {
	for _, s := range []string{
		`{"gpus":[{"count":1,"manufacturer":"AMD","model":"MI300X"}]}`,
		`{"cpu_cores":13,"ram_capacity":240518168576,"disk_capacity":13194139533312,"cpus":{"count":1,"model":"Xeon Platinum 8470","cores":13,"frequency":2000000000}}`,
		`{"description":"d","specs":{"cpu_cores":104,"cpus":[{"count":2}],"disks":[{"count":2,"type":"NVMe","capacity":1}]}}`,
		`{"authorized_key":"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk ci@build"}`,
		`{"description":null}`, `{"specs":null}`, `{"gpus":[null]}`, `{"cpus":null}`, `[]`, `""`, `0`,
		`{"cpu_cores":1e400}`, `{"cpu_cores":18446744073709551616}`, "\x00", `{"a":` + strings.Repeat("[", 5000),
	} {
		f.Add([]byte(s))
	}
	h := sim.NewHotAisle(sim.WithHotAisleLimits(1<<30, 1<<30), sim.WithHotAisleBalance(1<<50))
	paths := []struct{ method, path string }{
		{"POST", haTeamPath + "virtual_machines/"},
		{"POST", haTeamPath + "bare_metal/"},
		{"POST", "/api/user/ssh_keys/"},
		{"PATCH", haTeamPath + "virtual_machines/enc1-gpuvm999/"},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, p := range paths {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(p.method, p.path, bytes.NewReader(body))
			req.Header.Set("Authorization", sim.DefaultAPIKey)
			h.ServeHTTP(rec, req)
			switch rec.Code {
			case 200, 201:
				require.True(t, json.Valid(rec.Body.Bytes()), "%s", rec.Body)
			case 400, 401, 402, 403, 404, 409, 413, 422:
				var msg string
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &msg), "%d %s", rec.Code, rec.Body)
				require.NotEmpty(t, msg)
			default:
				t.Fatalf("%s %s %q: status %d", p.method, p.path, body, rec.Code)
			}
		}
	})
}
