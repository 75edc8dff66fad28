package vultrfake

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVultrVPCCrud(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		m := h.obj("POST", "/v2/vpcs", map[string]any{"region": "ewr", "description": "d",
			"v4_subnet": "", "v4_subnet_mask": 0}, http.StatusCreated)["vpc"].(map[string]any)
		id := m["id"].(string)
		assert.Regexp(t, `^10\.\d+\.\d+\.0$`, m["v4_subnet"])
		assert.EqualValues(t, 20, m["v4_subnet_mask"])
		assert.Equal(t, "d", m["description"])
		assert.NotEmpty(t, m["date_created"])

		fixed := h.obj("POST", "/v2/vpcs", map[string]any{"region": "ewr", "v4_subnet": "192.168.8.0",
			"v4_subnet_mask": 24}, http.StatusCreated)["vpc"].(map[string]any)
		assert.Equal(t, "192.168.8.0", fixed["v4_subnet"])

		h.obj("PUT", "/v2/vpcs/"+id, map[string]any{"description": "renamed"}, http.StatusNoContent)
		assert.Equal(t, "renamed", h.obj("GET", "/v2/vpcs/"+id, nil, 200)["vpc"].(map[string]any)["description"])
		list := h.obj("GET", "/v2/vpcs?per_page=500", nil, 200)
		assert.Len(t, list["vpcs"], 2)
		assert.EqualValues(t, 2, list["meta"].(map[string]any)["total"])
		h.obj("DELETE", "/v2/vpcs/"+id, nil, http.StatusNoContent)
		assert.Equal(t, "Invalid VPC ID.", h.fail("GET", "/v2/vpcs/"+id, nil, 404))
		assert.Equal(t, "Invalid VPC ID.", h.fail("DELETE", "/v2/vpcs/"+id, nil, 404))
		assert.Equal(t, "Invalid VPC ID.", h.fail("PUT", "/v2/vpcs/nope", map[string]any{"description": "x"}, 404))

		for body, msg := range map[string]string{
			`{"description":"x"}`:                                         "Bad request: region is required.",
			`{"region":"xyz"}`:                                            "Invalid region.",
			`{"region":"ewr","v4_subnet":"10.1.0.0"}`:                     "Bad request: v4_subnet and v4_subnet_mask must be given together.",
			`{"region":"ewr","v4_subnet":"8.8.8.0","v4_subnet_mask":24}`:  "Invalid v4_subnet: must be a private IPv4 network (RFC 1918).",
			`{"region":"ewr","v4_subnet":"10.1.0.5","v4_subnet_mask":24}`: "Invalid v4_subnet: host bits are set for this mask.",
			`{"region":"ewr","v4_subnet":"10.1.0.0","v4_subnet_mask":31}`: "Invalid v4_subnet_mask: must be from 8 to 29.",
		} {
			assert.Equal(t, msg, h.fail("POST", "/v2/vpcs", body, 400), body)
		}
	})
}

func TestVultrAttachDetach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		vpc, vpc2 := h.vpc("ewr"), h.vpc("ewr")
		id := h.create("vc2-1c-1gb", "ewr", nil)["id"].(string)
		path := "/v2/instances/" + id
		assert.Contains(t, h.fail("POST", path+"/vpcs/attach", map[string]any{"vpc_id": vpc}, 500), "Unable to attach VPC")
		time.Sleep(90*time.Second + 5*time.Minute)

		h.obj("POST", path+"/vpcs/attach", map[string]any{"vpc_id": vpc}, http.StatusNoContent)
		assert.Equal(t, []string{vpc}, h.serverVPCs("/v2/instances", id))
		rows := h.obj("GET", path+"/vpcs", nil, 200)["vpcs"].([]any)
		row := rows[0].(map[string]any)
		assert.Regexp(t, `^10\.`, row["ip_address"])
		assert.Regexp(t, `^5a:01:`, row["mac_address"])
		assert.Equal(t, row["ip_address"], h.get(id, false)["internal_ip"])
		assert.Contains(t, h.fail("POST", path+"/vpcs/attach", map[string]any{"vpc_id": vpc}, 400), "already attached")
		assert.Equal(t, "Invalid VPC ID.", h.fail("POST", path+"/vpcs/attach", map[string]any{"vpc_id": "nope"}, 404))
		assert.Equal(t, "Bad request: vpc_id is required.", h.fail("POST", path+"/vpcs/attach", map[string]any{}, 400))
		assert.Equal(t, "Invalid instance-id.", h.fail("POST", "/v2/instances/nope/vpcs/attach", map[string]any{"vpc_id": vpc}, 404))

		// PATCH attach_vpc / detach_vpc, as Terraform does.
		h.obj("PATCH", path, map[string]any{"attach_vpc": []string{vpc2}, "tags": nil}, http.StatusAccepted)
		assert.ElementsMatch(t, []string{vpc, vpc2}, h.serverVPCs("/v2/instances", id))
		h.obj("PATCH", path, map[string]any{"detach_vpc": []string{vpc2}}, http.StatusAccepted)
		assert.Equal(t, []string{vpc}, h.serverVPCs("/v2/instances", id))

		h.obj("POST", path+"/vpcs/detach", map[string]any{"vpc_id": vpc}, http.StatusNoContent)
		assert.Empty(t, h.serverVPCs("/v2/instances", id))
		assert.Equal(t, "", h.get(id, false)["internal_ip"])
		assert.Equal(t, vultrMsgNotAttached, h.fail("POST", path+"/vpcs/detach", map[string]any{"vpc_id": vpc}, 400))
		h.obj("DELETE", "/v2/vpcs/"+vpc, nil, http.StatusNoContent)
	})
}

func TestVultrNoPrivateNetworking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		vpc := h.vpc("ewr")
		id := h.create("vbm-4c-32gb", "ewr", nil)["id"].(string)
		time.Sleep(time.Hour)
		assert.Equal(t, vultrMsgNoPrivate, h.fail("POST", "/v2/bare-metals/"+id+"/vpcs/attach", map[string]any{"vpc_id": vpc}, 400))
		assert.Empty(t, h.serverVPCs("/v2/bare-metals", id))

		// Bare metal takes one VPC.
		bm := h.v.mustSeed(t, VultrSeed{Plan: "vbm-24c-256gb-amd", Region: "ewr", Age: time.Hour, VPCs: []string{vpc}})
		msg := h.fail("POST", "/v2/bare-metals/"+bm+"/vpcs/attach", map[string]any{"vpc_id": h.vpc("ewr")}, 400)
		assert.Equal(t, "Bare metal servers can attach only one VPC network.", msg)
	})
}

func TestVultrDetachLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		vpc := h.vpc("ewr")
		id := h.v.mustSeed(t, VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Age: time.Hour, VPCs: []string{vpc}})
		h.v.DetachLag(10 * time.Minute)
		h.obj("POST", "/v2/instances/"+id+"/vpcs/detach", map[string]any{"vpc_id": vpc}, http.StatusNoContent)
		assert.Equal(t, []string{vpc}, h.serverVPCs("/v2/instances", id), "the detach has not shown yet")
		assert.True(t, strings.HasPrefix(h.fail("DELETE", "/v2/vpcs/"+vpc, nil, 400), "The following servers are attached"))
		time.Sleep(10 * time.Minute)
		assert.Empty(t, h.serverVPCs("/v2/instances", id))
		h.obj("DELETE", "/v2/vpcs/"+vpc, nil, http.StatusNoContent)
	})
}

func TestVultrSSHKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		key := vultrTestKey(t, 3)
		k := h.obj("POST", "/v2/ssh-keys", map[string]any{"name": "fleet", "ssh_key": key}, 201)["ssh_key"].(map[string]any)
		id := k["id"].(string)
		assert.Equal(t, "fleet", k["name"])
		assert.Equal(t, key, k["ssh_key"])
		assert.NotEmpty(t, k["date_created"])
		h.obj("PATCH", "/v2/ssh-keys/"+id, map[string]any{"name": "renamed"}, 204)
		got := h.obj("GET", "/v2/ssh-keys/"+id, nil, 200)["ssh_key"].(map[string]any)
		assert.Equal(t, "renamed", got["name"])
		assert.Equal(t, key, got["ssh_key"])
		list := h.obj("GET", "/v2/ssh-keys", nil, 200)
		assert.Len(t, list["ssh_keys"], 1)
		assert.Equal(t, "Invalid SSH key.", h.fail("POST", "/v2/ssh-keys", map[string]any{"name": "x", "ssh_key": "garbage"}, 400))
		assert.Equal(t, "Invalid SSH key.", h.fail("PATCH", "/v2/ssh-keys/"+id, map[string]any{"ssh_key": "garbage"}, 400))
		assert.Contains(t, h.fail("POST", "/v2/ssh-keys", map[string]any{"ssh_key": key}, 400), "name")
		h.obj("DELETE", "/v2/ssh-keys/"+id, nil, 204)
		assert.Equal(t, "Invalid ssh key.", h.fail("GET", "/v2/ssh-keys/"+id, nil, 404))
		assert.Equal(t, "Invalid ssh key.", h.fail("DELETE", "/v2/ssh-keys/"+id, nil, 404))
	})
}

// mustSeed plants a server or fails the test.
func (v *Vultr) mustSeed(t *testing.T, s VultrSeed) string {
	t.Helper()
	id, err := v.SeedServer(s)
	require.NoError(t, err)
	return id
}
