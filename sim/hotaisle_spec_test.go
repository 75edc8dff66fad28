package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

// haSpecPath finds ../shared/spec/hotaisle-swagger.json: $GPUFLEET_SHARED
// (the shared directory), else a shared/spec/hotaisle-swagger.json in the
// working directory or any parent (CI places shared/ beside the clone).
// Missing, the test fails when CI=true and is skipped otherwise.
func haSpecPath(t *testing.T) string {
	const rel = "spec/hotaisle-swagger.json"
	if d := os.Getenv("GPUFLEET_SHARED"); d != "" {
		if _, err := os.Stat(filepath.Join(d, rel)); err == nil {
			return filepath.Join(d, rel)
		}
	}
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		p := filepath.Join(dir, "shared", rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Hot Aisle spec not found: set GPUFLEET_SHARED or place shared/spec/hotaisle-swagger.json beside the clone")
	}
	t.Skip("Hot Aisle spec not found (shared/spec/hotaisle-swagger.json); set GPUFLEET_SHARED")
	return ""
}

// haSpecRouter loads the Swagger 2.0 spec, converts it to OpenAPI 3 and
// routes requests for the in-memory client's base URL, the real one.
func haSpecRouter(t *testing.T) routers.Router {
	data, err := os.ReadFile(haSpecPath(t))
	require.NoError(t, err)
	var doc2 openapi2.T
	require.NoError(t, json.Unmarshal(data, &doc2))
	doc3, err := openapi2conv.ToV3(&doc2)
	require.NoError(t, err)
	doc3.Servers = openapi3.Servers{{URL: haBase + "/api"}}
	router, err := gorillamux.NewRouter(doc3)
	require.NoError(t, err)
	return router
}

// haSpecTransport validates every request sent through it and every
// response against the spec. A response that does not conform fails the
// test; a request's verdict is recorded for the test to check.
type haSpecTransport struct {
	t      *testing.T
	router routers.Router
	next   http.RoundTripper

	mu      sync.Mutex
	lastReq error // verdict on the last request
}

var haSpecOptions = &openapi3filter.Options{
	IncludeResponseStatus: true,
	AuthenticationFunc: func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
		if in.RequestValidationInput.Request.Header.Get("Authorization") == "" {
			return errors.New("no Authorization header")
		}
		return nil
	},
}

func (st *haSpecTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	withBody := func() *http.Request {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		return r
	}
	route, params, err := st.router.FindRoute(withBody())
	if err != nil {
		st.t.Errorf("%s %s: not in the spec: %v", req.Method, req.URL.Path, err)
		return st.next.RoundTrip(withBody())
	}
	in := &openapi3filter.RequestValidationInput{Request: withBody(), PathParams: params, Route: route,
		Options: haSpecOptions}
	reqErr := openapi3filter.ValidateRequest(req.Context(), in)
	st.mu.Lock()
	st.lastReq = reqErr
	st.mu.Unlock()
	resp, err := st.next.RoundTrip(withBody())
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode,
		Header: resp.Header, Body: io.NopCloser(bytes.NewReader(data)), Options: haSpecOptions}
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		st.t.Errorf("%s %s → %d %s: response does not conform: %v", req.Method, req.URL.Path, resp.StatusCode, data, err)
	}
	return resp, nil
}

// lastRequest reports the verdict on the last request.
func (st *haSpecTransport) lastRequest() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.lastReq
}

// TestHotAisleConformsToSpec drives every served route, successes and
// documented errors, and validates each request and each response against
// Hot Aisle's Swagger 2.0 spec (converted to OpenAPI 3 by kin-openapi).
// Where the fake accepts what the spec forbids it follows the real API and
// the test says so: partial VM specs (the official CLI and Hot Aisle's docs
// send them; the spec marks cpu_cores, ram_capacity and disk_capacity
// required).
func TestHotAisleConformsToSpec(t *testing.T) {
	router := haSpecRouter(t)
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle(sim.WithSeed(3))
		tr := &haSpecTransport{t: t, router: router, next: h.Client().Transport}
		x := &haT{t: t, h: h, c: &http.Client{Transport: tr}}
		call := func(method, path, auth string, body any, status int, validRequest bool) []byte {
			t.Helper()
			resp, data := x.req(method, path, auth, body)
			require.Equal(t, status, resp.StatusCode, "%s %s: %s", method, path, data)
			if validRequest {
				require.NoError(t, tr.lastRequest(), "%s %s", method, path)
			} else {
				require.Error(t, tr.lastRequest(), "%s %s: the spec should refuse this request", method, path)
			}
			return data
		}
		tok := "Token " + sim.DefaultAPIKey
		ok := func(method, path string, body any, status int) []byte {
			t.Helper()
			return call(method, path, tok, body, status, true)
		}
		haSpecUserAndKeys(t, ok, call, tok)
		haSpecVMs(t, h, ok, call, tok)
		haSpecBareMetal(t, h, ok, call, tok)
		require.NoError(t, h.Inject(sim.Fault{Route: "GET /api/teams/{team}/virtual_machines/", Times: 1}))
		ok("GET", haTeamPath+"virtual_machines/", nil, 500)

		seen := map[string]bool{}
		for _, c := range h.Calls() {
			seen[c.Route] = true
		}
		for _, r := range h.Routes() {
			assert.True(t, seen[r], "route %s not exercised", r)
		}

		// A key with only the user role.
		ro := sim.NewHotAisle(sim.WithHotAisleUserRoleOnly())
		tr.next = ro.Client().Transport
		ok("POST", haTeamPath+"virtual_machines/", haSpecFullVM, 403)
		ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": "ssh-ed25519 AAAA x"}, 403)
		ok("POST", haTeamPath+"bare_metal/enc1-gpu001/power/power_on/", nil, 403)
	})
}

// haSpecFullVM is the 1x row's Specs, as dstack sends it.
var haSpecFullVM = json.RawMessage(`{"cpu_cores":13,"ram_capacity":240518168576,"disk_capacity":13194139533312,
 "cpus":{"count":1,"manufacturer":"Intel","model":"Xeon Platinum 8470","cores":13,"frequency":2000000000},
 "gpus":[{"count":1,"manufacturer":"AMD","model":"MI300X"}]}`)

type haSpecOK func(method, path string, body any, status int) []byte

type haSpecCall func(method, path, auth string, body any, status int, validRequest bool) []byte

func haSpecUserAndKeys(t *testing.T, ok haSpecOK, call haSpecCall, tok string) {
	ok("GET", "/api/user/", nil, 200)
	call("GET", "/api/user/", "", nil, 401, false) // no token: the spec's security refuses it too
	call("GET", "/api/user/", "Token wrong", nil, 401, true)
	ok("GET", "/api/teams/", nil, 200)
	ok("GET", haTeamPath, nil, 200)
	ok("GET", "/api/teams/nobody/", nil, 404)
	ok("GET", haTeamPath+"balance/", nil, 200)
	_, line := haKeyPair(t, 9, "spec@test")
	var key haKeyJSON
	require.NoError(t, json.Unmarshal(ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 200), &key))
	ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 409)
	ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": "ssh-ed25519 !!"}, 422)
	call("POST", "/api/user/ssh_keys/", tok, map[string]string{}, 400, false) // authorized_key is required
	ok("GET", "/api/user/ssh_keys/", nil, 200)
	fp := url.PathEscape(strings.TrimPrefix(key.Fingerprint, "SHA256:"))
	ok("DELETE", "/api/user/ssh_keys/"+fp+"/", nil, 204)
	ok("DELETE", "/api/user/ssh_keys/"+fp+"/", nil, 404)
}

func haSpecVMs(t *testing.T, h *sim.HotAisle, ok haSpecOK, call haSpecCall, tok string) {
	vms := haTeamPath + "virtual_machines/"
	var rows []haRow
	require.NoError(t, json.Unmarshal(ok("GET", vms+"available/", nil, 200), &rows))
	var vm haVM
	require.NoError(t, json.Unmarshal(ok("POST", vms, rows[0].Specs, 200), &vm))
	call("POST", vms, tok, haGPUSpec(2), 200, false) // partial spec: see the test's doc
	ok("POST", vms, rows[1].Specs, 404)              // the sold-out row
	call("POST", vms, tok, `{"cpu_cores": "13"}`, 422, false)
	call("POST", vms, tok, `{`, 400, false)
	ok("GET", vms, nil, 200)
	p := vms + vm.Name + "/"
	ok("GET", p, nil, 200)
	ok("GET", vms+"enc1-gpuvm999/", nil, 404)
	ok("PATCH", p, map[string]string{"description": "spec"}, 204)
	ok("GET", p+"state/", nil, 200)
	ok("POST", p+"stop/", nil, 204)
	ok("POST", p+"start/", nil, 204)
	ok("POST", p+"reboot/", nil, 204)
	ok("POST", p+"hard-reset/", nil, 204)
	ok("POST", p+"shutdown/", nil, 204)
	ok("GET", p+"state/", nil, 200) // "in shutdown"
	ok("POST", p+"reboot/", nil, 400)
	ok("POST", p+"hard-reset/", nil, 400)
	ok("POST", p+"shutdown/", nil, 400)
	ok("POST", p+"start/", nil, 204)
	ok("POST", vms+"enc1-gpuvm999/reboot/", nil, 404)
	ok("DELETE", p, nil, 400)
	ok("DELETE", p+"?force=true", nil, 204)
	ok("DELETE", p, nil, 404)
	h.SetVMLimit(1)
	ok("POST", vms, haSpecFullVM, 401)
	h.SetVMLimit(10)
	h.InsufficientBalance()
	ok("POST", vms, haSpecFullVM, 402)
	h.SetBalance(sim.DefaultHotAisleBalanceCents)
}

func haSpecBareMetal(t *testing.T, h *sim.HotAisle, ok haSpecOK, call haSpecCall, tok string) {
	bms := haTeamPath + "bare_metal/"
	var rows []haRow
	require.NoError(t, json.Unmarshal(ok("GET", bms+"available/", nil, 200), &rows))
	reserve := map[string]any{"description": "spec", "specs": rows[0].Specs}
	var bm haBM
	require.NoError(t, json.Unmarshal(ok("POST", bms, reserve, 201), &bm))
	ok("GET", bms, nil, 200)
	p := bms + bm.Name + "/"
	ok("GET", p, nil, 200)
	ok("PATCH", p, map[string]string{"description": "x"}, 204)
	ok("GET", p+"power/", nil, 200)
	haSpecBareMetalPower(t, ok, p+"power/")
	ok("DELETE", p, nil, 400)
	ok("DELETE", p+"?force=true", nil, 204)
	ok("GET", p, nil, 404)
	ok("GET", p+"power/", nil, 404)
	ok("POST", p+"power/power_on/", nil, 404)
	ok("DELETE", p, nil, 404)
	call("POST", bms, tok, map[string]any{"description": "no specs"}, 400, false) // specs is required
	require.NoError(t, h.SoldOut("bm-mi300x-8"))
	ok("POST", bms, reserve, 404)
	require.NoError(t, h.SetQuantity("bm-mi300x-8", 1))
	h.SetBareMetalLimit(0)
	ok("POST", bms, reserve, 403)
	h.SetBareMetalLimit(5)
	h.InsufficientBalance()
	ok("POST", bms, reserve, 402)
}

// haSpecBareMetalPower drives the six power actions of a server whose OS is
// installing, then installed, through their successes and refusals, and a
// power read during an AC reset.
func haSpecBareMetalPower(t *testing.T, ok haSpecOK, p string) {
	ok("POST", p+"power_on/", nil, 400) // the OS is installing
	time.Sleep(sim.DefaultHotAisleInstallTime)
	ok("POST", p+"power_on/", nil, 204) // already on
	ok("POST", p+"warm_reboot/", nil, 204)
	ok("POST", p+"cold_reboot/", nil, 204)
	ok("POST", p+"graceful_shutdown/", nil, 400) // off for the cold reboot
	time.Sleep(sim.DefaultHotAisleBareMetalOffTime)
	ok("POST", p+"ac_reset/", nil, 400) // on
	ok("POST", p+"graceful_shutdown/", nil, 204)
	time.Sleep(sim.DefaultHotAisleBareMetalShutdownTime)
	ok("POST", p+"warm_reboot/", nil, 400)
	ok("POST", p+"power_on/", nil, 204)
	ok("POST", p+"force_shutdown/", nil, 204)
	ok("POST", p+"ac_reset/", nil, 204)
	ok("GET", p, nil, 500)
	ok("POST", p+"power_on/", nil, 500)
	time.Sleep(sim.DefaultHotAisleACResetTime)
	var st struct{ State string }
	require.NoError(t, json.Unmarshal(ok("GET", p, nil, 200), &st))
	require.Equal(t, "On", st.State)
}
