package sim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

// haBase is the real base URL: the in-memory client reaches the fake from it.
const haBase = "https://admin.hotaisle.app"

// haT drives a HotAisle fake through its in-memory client.
type haT struct {
	t *testing.T
	h *sim.HotAisle
	c *http.Client
}

func haNew(t *testing.T, opts ...sim.Option) *haT {
	h := sim.NewHotAisle(opts...)
	return &haT{t: t, h: h, c: h.Client()}
}

// req sends method path with body (a string is sent as is, anything else
// JSON-encoded, nil none) and the Authorization header auth ("" for none).
func (x *haT) req(method, path, auth string, body any) (*http.Response, []byte) {
	x.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(x.t, err)
		rd = bytes.NewReader(data)
	}
	r, err := http.NewRequest(method, haBase+path, rd)
	require.NoError(x.t, err)
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	if rd != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := x.c.Do(r)
	require.NoError(x.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(x.t, err)
	return resp, data
}

// do sends an authorized request and returns the status and body.
func (x *haT) do(method, path string, body any) (int, []byte) {
	x.t.Helper()
	resp, data := x.req(method, path, "Token "+sim.DefaultAPIKey, body)
	return resp.StatusCode, data
}

// ok sends an authorized request, requires want and decodes the body into v
// (if not nil).
func (x *haT) ok(method, path string, body any, want int, v any) {
	x.t.Helper()
	status, data := x.do(method, path, body)
	require.Equal(x.t, want, status, "%s %s: %s", method, path, data)
	if v != nil {
		require.NoError(x.t, json.Unmarshal(data, v), "%s", data)
	}
}

// fail sends an authorized request and requires status and the error
// message (a JSON string body).
func (x *haT) fail(method, path string, body any, status int, msg string) {
	x.t.Helper()
	got, data := x.do(method, path, body)
	require.Equal(x.t, status, got, "%s %s: %s", method, path, data)
	require.Equal(x.t, msg, haMsg(x.t, data), "%s %s", method, path)
}

// haMsg decodes a Hot Aisle error body: a JSON string.
func haMsg(t *testing.T, data []byte) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal(data, &s), "error body is not a JSON string: %s", data)
	return s
}

// haVM is what the tests read of a VirtualMachineDetails.
type haVM struct {
	Name         string `json:"name"`
	IPAddress    string `json:"ip_address"`
	Description  string `json:"description"`
	CPUCores     uint64 `json:"cpu_cores"`
	RAMCapacity  uint64 `json:"ram_capacity"`
	DiskCapacity uint64 `json:"disk_capacity"`
	CPUs         struct {
		Count        uint64 `json:"count"`
		Manufacturer string `json:"manufacturer"`
		Model        string `json:"model"`
		Cores        uint64 `json:"cores"`
		Frequency    uint64 `json:"frequency"`
	} `json:"cpus"`
	GPUs []struct {
		Count        uint64 `json:"count"`
		Manufacturer string `json:"manufacturer"`
		Model        string `json:"model"`
	} `json:"gpus"`
}

// haBM is what the tests read of a BareMetalServerDetails.
type haBM struct {
	Name         string `json:"name"`
	IPAddress    string `json:"ip_address"`
	Manufacturer string `json:"manufacturer"`
	Model        string `json:"model"`
	Description  string `json:"description"`
	SSHAccess    struct {
		IPAddress string `json:"ip_address"`
		Port      int    `json:"port"`
		DNSName   string `json:"dns_name"`
	} `json:"ssh_access"`
	CPUCores     uint64            `json:"cpu_cores"`
	RAMCapacity  uint64            `json:"ram_capacity"`
	DiskCapacity uint64            `json:"disk_capacity"`
	CPUs         []json.RawMessage `json:"cpus"`
	Disks        []struct {
		Count    uint64 `json:"count"`
		Type     string `json:"type"`
		Capacity uint64 `json:"capacity"`
	} `json:"disks"`
	OSStatus struct {
		OSSelection       string `json:"os_selection"`
		OSInstallStatus   string `json:"os_install_status"`
		LastImagingUpdate string `json:"last_imaging_update"`
	} `json:"os_status"`
}

const haTeamPath = "/api/teams/" + sim.DefaultTeam + "/"

// haGPUSpec is a partial VM spec asking for n MI300X.
func haGPUSpec(n int) map[string]any {
	return map[string]any{"gpus": []map[string]any{{"count": n, "manufacturer": "AMD", "model": "MI300X"}}}
}

// provision provisions a VM with n GPUs and returns it.
func (x *haT) provision(n int) haVM {
	x.t.Helper()
	var vm haVM
	x.ok("POST", haTeamPath+"virtual_machines/", haGPUSpec(n), 200, &vm)
	return vm
}

// reserve reserves the default bare-metal server and returns it.
func (x *haT) reserve(desc string) haBM {
	x.t.Helper()
	var bm haBM
	x.ok("POST", haTeamPath+"bare_metal/", map[string]any{"description": desc,
		"specs": map[string]any{"gpus": []map[string]any{{"count": 8, "model": "MI300X"}}}}, 201, &bm)
	return bm
}

// charge returns the ledger entry of the resource named id.
func haCharge(t *testing.T, h *sim.HotAisle, id string) sim.Charge {
	t.Helper()
	for _, c := range h.Ledger().Charges {
		if c.ResourceID == id {
			return c
		}
	}
	t.Fatalf("no charge for %s", id)
	return sim.Charge{}
}

// haResource returns the resource with the given id.
func haResource(t *testing.T, h *sim.HotAisle, id string) sim.Resource {
	t.Helper()
	for _, r := range h.Resources() {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no resource %s", id)
	return sim.Resource{}
}
