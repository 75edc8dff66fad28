package vultrfake

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVultrVMTimeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		start := time.Now()
		vpc := h.vpc("ewr")
		inst := h.create("vcg-a100-3c-30g-20vram", "ewr", map[string]any{"attach_vpc": []string{vpc}})
		id := inst["id"].(string)
		assert.Equal(t, "pending", inst["status"])
		assert.Equal(t, "running", inst["power_status"])
		assert.Equal(t, "none", inst["server_status"])
		assert.Equal(t, "0.0.0.0", inst["main_ip"])
		assert.Equal(t, "", inst["internal_ip"])
		assert.EqualValues(t, 0, inst["disk"])
		assert.EqualValues(t, 30720, inst["ram"])
		assert.NotEmpty(t, inst["default_password"])
		assert.Equal(t, "Ubuntu 22.04 LTS x64", inst["os"])
		created, err := time.Parse(time.RFC3339, inst["date_created"].(string))
		require.NoError(t, err)
		assert.True(t, created.Equal(start))
		assert.Regexp(t, `\+00:00$`, inst["date_created"])
		assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, id)

		vultrSleepTo(start, 89*time.Second)
		assert.Equal(t, "pending", h.get(id, false)["status"])

		vultrSleepTo(start, 90*time.Second)
		got := h.get(id, false)
		assert.Equal(t, "active", got["status"])
		assert.Equal(t, "installingbooting", got["server_status"])
		assert.NotEqual(t, "0.0.0.0", got["main_ip"])
		assert.Regexp(t, `^10\.\d+\.\d+\.3$`, got["internal_ip"])
		assert.EqualValues(t, 700, got["disk"])
		assert.Nil(t, got["default_password"], "the password is only in the create answer")

		vultrSleepTo(start, 150*time.Second)
		assert.Equal(t, "ok", h.get(id, false)["server_status"])
	})
}

func TestVultrDeleteWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		start := time.Now()
		vpc := h.vpc("ewr")
		id := h.create("vc2-1c-1gb", "ewr", map[string]any{"attach_vpc": []string{vpc}})["id"].(string)
		path := "/v2/instances/" + id

		vultrSleepTo(start, 5*time.Second)
		assert.Equal(t, vultrMsgNotActiveDel, h.fail("DELETE", path, nil, 500))

		// Active for 2 min: server_status already says ok, yet every mutation is locked.
		vultrSleepTo(start, 90*time.Second+2*time.Minute)
		assert.Equal(t, "ok", h.get(id, false)["server_status"])
		assert.Equal(t, "Unable to destroy server: Unable to remove VM: Server is currently locked",
			h.fail("DELETE", path, nil, 500))
		assert.Contains(t, h.fail("PATCH", path, map[string]any{"label": "x"}, 500), "Server is currently locked")
		assert.Contains(t, h.fail("POST", path+"/vpcs/detach", map[string]any{"vpc_id": vpc}, 500), "Server is currently locked")
		assert.Contains(t, h.fail("POST", path+"/vpcs/attach", map[string]any{"vpc_id": h.vpc("ewr")}, 500), "Server is currently locked")
		assert.Contains(t, h.fail("POST", path+"/halt", nil, 500), "Server is currently locked")
		assert.Contains(t, h.fail("POST", path+"/reboot", nil, 500), "Server is currently locked")

		vultrSleepTo(start, 90*time.Second+5*time.Minute)
		h.obj("DELETE", path, nil, http.StatusNoContent)
		deleted := time.Now()

		// Within the destroy window the server still shows, stopped and locked.
		got := h.get(id, false)
		assert.Equal(t, "stopped", got["power_status"])
		assert.Equal(t, "locked", got["server_status"])
		assert.Contains(t, h.fail("DELETE", path, nil, 500), "pending destruction")
		assert.Contains(t, h.fail("DELETE", "/v2/vpcs/"+vpc, nil, 400),
			"The following servers are attached to this VPC network: "+id)

		vultrSleepTo(deleted, 60*time.Second)
		assert.Equal(t, "Invalid instance-id.", h.fail("GET", path, nil, 404))
		assert.Equal(t, "Invalid instance-id.", h.fail("GET", path+"/vpcs", nil, 404))
		assert.Equal(t, "Invalid instance-id.", h.fail("DELETE", path, nil, 404))
		list := h.obj("GET", "/v2/instances", nil, 200)
		assert.Empty(t, list["instances"])
		h.obj("DELETE", "/v2/vpcs/"+vpc, nil, http.StatusNoContent)
	})
}

func TestVultrAttachmentLingersAfterDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t, WithVultrTiming("vc2-*", VultrTiming{Destroy: 10 * time.Second, AttachLinger: 60 * time.Second}))
		vpc := h.vpc("ord")
		id := h.create("vc2-1c-1gb", "ord", map[string]any{"attach_vpc": []string{vpc}})["id"].(string)
		h.obj("DELETE", "/v2/instances/"+id, nil, http.StatusNoContent)
		deleted := time.Now()
		vultrSleepTo(deleted, 30*time.Second)
		h.fail("GET", "/v2/instances/"+id, nil, 404)
		msg := h.fail("DELETE", "/v2/vpcs/"+vpc, nil, 400)
		assert.Contains(t, msg, id)
		att := h.obj("GET", "/v2/vpcs/"+vpc+"/attachments", nil, 200)["attachments"].([]any)
		require.Len(t, att, 1)
		vultrSleepTo(deleted, 60*time.Second)
		h.obj("DELETE", "/v2/vpcs/"+vpc, nil, http.StatusNoContent)
		assert.Equal(t, "Invalid VPC ID.", h.fail("GET", "/v2/vpcs/"+vpc, nil, 404))
	})
}

func TestVultrBareMetalTimeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		start := time.Now()
		bm := h.create("vbm-256c-2048gb-8-mi300x-gpu", "ord", map[string]any{"os_id": nil, "image_id": "docker"})
		id := bm["id"].(string)
		assert.Equal(t, "pending", bm["status"])
		assert.Equal(t, "2097152 MB", bm["ram"])
		assert.Equal(t, "8x 3576 GB NVMe", bm["disk"])
		assert.EqualValues(t, 128, bm["cpu_count"])
		assert.EqualValues(t, 0, bm["mac_address"])
		assert.Equal(t, "", bm["main_ip"])
		assert.Equal(t, "docker", bm["image_id"])
		assert.NotEmpty(t, bm["default_password"])

		vultrSleepTo(start, 39*time.Minute)
		assert.Equal(t, "pending", h.get(id, true)["status"])
		assert.Equal(t, vultrMsgNotActiveDel, h.fail("DELETE", "/v2/bare-metals/"+id, nil, 500))
		assert.Equal(t, "Invalid instance-id.", h.fail("GET", "/v2/instances/"+id, nil, 404), "a bare-metal id is no instance")

		vultrSleepTo(start, 40*time.Minute)
		got := h.get(id, true)
		assert.Equal(t, "active", got["status"])
		assert.NotEmpty(t, got["main_ip"])
		mac, ok := got["mac_address"].(float64)
		require.True(t, ok, "mac_address is a JSON number")
		assert.Greater(t, mac, float64(0))
		assert.Contains(t, h.fail("DELETE", "/v2/bare-metals/"+id, nil, 500), "Server is currently locked")

		vultrSleepTo(start, 45*time.Minute)
		h.obj("DELETE", "/v2/bare-metals/"+id, nil, http.StatusNoContent)
		time.Sleep(time.Minute)
		assert.Equal(t, "Invalid server.", h.fail("GET", "/v2/bare-metals/"+id, nil, 404))
		assert.Equal(t, "Invalid instance-id.", h.fail("GET", "/v2/bare-metals/"+id+"/vpcs", nil, 404))
	})
}

func TestVultrPowerAndUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		inst := h.create("vhf-1c-1gb", "sea", map[string]any{"tags": []string{"a"}, "user_data": "I2Nsb3VkLWNvbmZpZwo="})
		id := inst["id"].(string)
		path := "/v2/instances/" + id
		assert.Contains(t, h.fail("POST", path+"/halt", nil, 500), "not currently active")
		// Label and tags may change while pending; null tags leave them alone.
		up := h.obj("PATCH", path, map[string]any{"label": "renamed", "tags": nil}, 202)["instance"].(map[string]any)
		assert.Equal(t, "renamed", up["label"])
		assert.Equal(t, []any{"a"}, up["tags"])
		up = h.obj("PATCH", path, map[string]any{"tags": []string{"b", "c"}}, 202)["instance"].(map[string]any)
		assert.Equal(t, []any{"b", "c"}, up["tags"])
		assert.Contains(t, h.fail("PATCH", path, map[string]any{"plan": "vc2-1c-2gb"}, 400), "plan")

		time.Sleep(90*time.Second + 5*time.Minute)
		h.obj("POST", path+"/halt", nil, http.StatusNoContent)
		assert.Equal(t, "stopped", h.get(id, false)["power_status"])
		h.obj("POST", path+"/start", nil, http.StatusNoContent)
		assert.Equal(t, "running", h.get(id, false)["power_status"])
		ud := h.obj("GET", path+"/user-data", nil, 200)["user_data"].(map[string]any)
		assert.Equal(t, "I2Nsb3VkLWNvbmZpZwo=", ud["data"])
	})
}

func TestVultrListFilters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		a := h.create("vc2-1c-1gb", "ewr", map[string]any{"label": "a", "tags": []string{"fleet-x"}})
		h.create("vc2-1c-1gb", "ord", map[string]any{"label": "b", "tag": "fleet-y"})
		h.create("vbm-24c-256gb-amd", "ewr", map[string]any{"label": "a"})
		ids := func(q string) []string {
			var out []string
			for _, x := range h.obj("GET", "/v2/instances"+q, nil, 200)["instances"].([]any) {
				out = append(out, x.(map[string]any)["label"].(string))
			}
			return out
		}
		assert.Equal(t, []string{"a", "b"}, ids(""))
		assert.Equal(t, []string{"a"}, ids("?label=a"))
		assert.Equal(t, []string{"b"}, ids("?tag=fleet-y"))
		assert.Equal(t, []string{"a"}, ids("?tag=fleet-x"))
		assert.Equal(t, []string{"b"}, ids("?region=ord"))
		assert.Empty(t, ids("?label=zzz"))
		time.Sleep(2 * time.Minute)
		ip := h.get(a["id"].(string), false)["main_ip"].(string)
		assert.Equal(t, []string{"a"}, ids("?main_ip="+ip))
		bms := h.obj("GET", "/v2/bare-metals", nil, 200)["bare_metals"].([]any)
		require.Len(t, bms, 1)
	})
}
