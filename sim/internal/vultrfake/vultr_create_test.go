package vultrfake

import (
	"encoding/base64"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVultrCreateRefusals needs no time, so it runs outside a bubble (which
// would forbid t.Run).
func TestVultrCreateRefusals(t *testing.T) {
	h := newVultrT(t)
	vpcORD := h.vpc("ord")
	vpcEWR := h.vpc("ewr")
	base := func(kv ...any) map[string]any {
		m := map[string]any{"region": "ewr", "plan": "vc2-1c-1gb", "os_id": 1743}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	cases := []struct {
		name, path string
		body       map[string]any
		status     int
		msg        string
	}{
		{"no region", "/v2/instances", base("region", nil), 400, "Bad request: region is required."},
		{"no plan", "/v2/instances", base("plan", nil), 400, "Bad request: plan is required."},
		{"unknown region", "/v2/instances", base("region", "xxx"), 400, "Invalid region."},
		{"unknown plan", "/v2/instances", base("plan", "vc2-99c"), 400, "Invalid plan chosen."},
		{"metal plan on instances", "/v2/instances", base("plan", "vbm-24c-256gb-amd"), 400, "Invalid plan chosen."},
		{"vm plan on bare metal", "/v2/bare-metals", base(), 400, "Invalid plan chosen."},
		{"plan not in region", "/v2/instances", base("plan", "vcg-l40s-16c-180g-48vram", "region", "ord"), 400, "Plan is not offered in the selected region."},
		{"no boot source", "/v2/instances", base("os_id", nil), 400, "Bad request: one of os_id, iso_id, snapshot_id, app_id or image_id is required."},
		{"two boot sources", "/v2/instances", base("image_id", "docker"), 400, "Bad request: give only one of os_id, iso_id, snapshot_id, app_id or image_id."},
		{"unknown os", "/v2/instances", base("os_id", 99999), 400, "Invalid os_id."},
		{"user_data not base64", "/v2/instances", base("user_data", "#cloud-config\n"), 400, "Invalid user_data: it must be base64 encoded."},
		{"unknown ssh key", "/v2/instances", base("sshkey_id", []string{"nope"}), 400, "Invalid SSH key ID: nope"},
		{"unknown vpc", "/v2/instances", base("attach_vpc", []string{"nope"}), 404, "Invalid VPC ID."},
		{"vpc of another region", "/v2/instances", base("attach_vpc", []string{vpcORD}), 400, "The VPC network is in a different region than the server."},
		{"no private networking", "/v2/bare-metals", base("plan", "vbm-4c-32gb", "attach_vpc", []string{vpcEWR}), 400, "This plan does not support private networking."},
		{"bad user_scheme", "/v2/instances", base("user_scheme", "admin"), 400, "Invalid user_scheme: must be root or limited."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.msg, h.fail("POST", c.path, c.body, c.status))
		})
	}
	assert.Empty(t, h.obj("GET", "/v2/instances", nil, 200)["instances"], "no refused create left a server")
	assert.Empty(t, h.v.Ledger().Charges)
}

func TestVultrCreateVPCAtCreate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		vpc := h.vpc("ord")
		bm := h.create("vbm-256c-2048gb-8-mi300x-gpu", "ord", map[string]any{"attach_vpc": []string{vpc}})
		assert.Equal(t, []string{vpc}, h.serverVPCs("/v2/bare-metals", bm["id"].(string)))
		assert.Equal(t, "", bm["internal_ip"], "no internal_ip before active")
		time.Sleep(40 * time.Minute)
		assert.Regexp(t, `^10\.`, h.get(bm["id"].(string), true)["internal_ip"])

		// enable_vpc without attach_vpc joins the region's oldest VPC.
		inst := h.create("vc2-1c-1gb", "ord", map[string]any{"enable_vpc": true})
		assert.Equal(t, []string{vpc}, h.serverVPCs("/v2/instances", inst["id"].(string)))
		// … and creates one when the region has none.
		inst = h.create("vc2-1c-1gb", "sea", map[string]any{"enable_vpc": true})
		got := h.serverVPCs("/v2/instances", inst["id"].(string))
		require.Len(t, got, 1)
		v := h.obj("GET", "/v2/vpcs/"+got[0], nil, 200)["vpc"].(map[string]any)
		assert.Equal(t, "sea", v["region"])
		assert.EqualValues(t, 20, v["v4_subnet_mask"])
	})
}

func TestVultrCreateFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		inst := h.create("vc2-2c-4gb", "fra", map[string]any{"label": "lbl", "hostname": "", "tags": nil,
			"enable_ipv6": true, "backups": "enabled", "ddos_protection": true, "block_devices": nil})
		assert.Equal(t, "lbl", inst["hostname"], "the hostname defaults to the label")
		assert.Equal(t, []any{}, inst["tags"])
		assert.ElementsMatch(t, []any{"ipv6", "auto_backups", "ddos_protection"}, inst["features"])
		assert.Equal(t, "root", inst["user_scheme"])
		time.Sleep(2 * time.Minute)
		got := h.get(inst["id"].(string), false)
		assert.Regexp(t, `^100\.72\.\d+\.\d+$`, got["main_ip"])
		assert.NotEmpty(t, got["v6_main_ip"])
		assert.EqualValues(t, 64, got["v6_network_size"])
		assert.Equal(t, "255.255.254.0", got["netmask_v4"])

		app := h.create("vhf-1c-1gb", "ewr", map[string]any{"os_id": nil, "app_id": 37})
		assert.Equal(t, "Application", app["os"])
		assert.EqualValues(t, 37, app["app_id"])
		iso := h.create("vhf-1c-1gb", "ewr", map[string]any{"os_id": 0, "iso_id": "abc"})
		assert.Equal(t, "Custom", iso["os"])
	})
}

func TestVultrDeterministicFromSeed(t *testing.T) {
	run := func(seed uint64) []string {
		var out []string
		synctest.Test(t, func(t *testing.T) {
			h := newVultrT(t, WithSeed(seed))
			for i := 0; i < 3; i++ {
				inst := h.create("vc2-1c-1gb", "ewr", nil)
				out = append(out, inst["id"].(string), inst["default_password"].(string))
			}
			time.Sleep(2 * time.Minute)
			for _, r := range h.v.Resources() {
				out = append(out, h.get(r.ID, false)["main_ip"].(string))
			}
		})
		return out
	}
	a, b, c := run(7), run(7), run(8)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
}

func TestVultrSSHKeysAtCreate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		keyA, keyB := vultrTestKey(t, 1), vultrTestKey(t, 2)
		k := h.obj("POST", "/v2/ssh-keys", map[string]any{"name": "a", "ssh_key": keyA}, http.StatusCreated)
		keyID := k["ssh_key"].(map[string]any)["id"].(string)
		ud := base64.StdEncoding.EncodeToString([]byte("#cloud-config\nssh_authorized_keys:\n  - " + keyB + "\n"))
		inst := h.create("vc2-1c-1gb", "ewr", map[string]any{"sshkey_id": []string{keyID}, "user_data": ud})
		srv := h.v.st.servers[inst["id"].(string)]
		require.Len(t, srv.keys, 2)
	})
}
