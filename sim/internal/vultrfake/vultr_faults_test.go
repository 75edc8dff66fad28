package vultrfake

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVultrInjectAttachFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		vpc := h.vpc("ewr")
		id := h.v.mustSeed(t, VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Age: time.Hour})
		require.NoError(t, h.v.Inject(core.Fault{Route: "POST /v2/instances/{id}/vpcs/attach", Times: 2,
			Status: 500, Message: "Unable to attach VPC"}))
		for i := 0; i < 2; i++ {
			assert.Equal(t, "Unable to attach VPC", h.fail("POST", "/v2/instances/"+id+"/vpcs/attach", map[string]any{"vpc_id": vpc}, 500))
			assert.Empty(t, h.serverVPCs("/v2/instances", id), "a failed attach attaches nothing")
		}
		h.obj("POST", "/v2/instances/"+id+"/vpcs/attach", map[string]any{"vpc_id": vpc}, 204)
		assert.Equal(t, []string{vpc}, h.serverVPCs("/v2/instances", id))
		calls := h.v.Calls()
		var faults int
		for _, c := range calls {
			if c.Fault {
				faults++
				assert.Equal(t, "POST /v2/instances/{id}/vpcs/attach", c.Route)
			}
		}
		assert.Equal(t, 2, faults)
	})
}

func TestVultrInjectAfterCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		require.NoError(t, h.v.Inject(core.Fault{Route: "POST /v2/instances", Times: 1, Status: 500, AfterCommit: true}))
		body := map[string]any{"region": "ewr", "plan": "vc2-1c-1gb", "os_id": 1743, "label": "s06"}
		assert.Equal(t, "Internal server error.", h.fail("POST", "/v2/instances", body, 500))
		list := h.obj("GET", "/v2/instances?label=s06", nil, 200)["instances"].([]any)
		require.Len(t, list, 1, "the create took effect although it answered 500")
		require.Len(t, h.v.Resources(), 1)
		assert.Len(t, h.v.Ledger().Charges, 1)
	})
}

func TestVultrInjectUnknownRoute(t *testing.T) {
	v := NewVultr()
	assert.Error(t, v.Inject(core.Fault{Route: "POST /v2/instance"}))
	assert.Error(t, v.Inject(core.Fault{Route: "GET /v2/vpc2"}))
	assert.Error(t, v.Inject(core.Fault{Route: "POST /v2/instances", Status: 302}))
	assert.NoError(t, v.Inject(core.Fault{Route: "POST /v2/instances", Status: 200}), "a 2xx carrying an error body")
	assert.NoError(t, v.Inject(core.Fault{Route: "GET /v2/regions/{id}/availability"}))
}

func TestVultrFlakyAttach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		vpc := h.vpc("ord")
		bm := h.v.mustSeed(t, VultrSeed{Plan: "vbm-256c-2048gb-8-mi300x-gpu", Region: "ord", Age: 2 * time.Hour})
		require.NoError(t, h.v.FlakyAttach(2))
		path := "/v2/bare-metals/" + bm + "/vpcs/attach"
		assert.Equal(t, "Unable to attach VPC", h.fail("POST", path, map[string]any{"vpc_id": vpc}, 500))
		assert.Equal(t, "Unable to attach VPC", h.fail("POST", path, map[string]any{"vpc_id": vpc}, 500))
		h.obj("POST", path, map[string]any{"vpc_id": vpc}, 204)
	})
}

func TestVultrOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		require.NoError(t, h.v.Outage(20*time.Minute))
		req, _ := http.NewRequestWithContext(context.Background(), "GET", "https://api.vultr.com/v2/plans", nil)
		_, err := h.c.Do(req)
		require.Error(t, err)
		assert.True(t, errors.Is(err, syscall.ECONNRESET), "%v", err)
		st, data, hdr := h.do("GET", "/v2/instances", nil)
		require.Equal(t, 503, st)
		vultrErrorBody(t, 503, data, hdr)
		time.Sleep(20 * time.Minute)
		h.obj("GET", "/v2/instances", nil, 200)
	})
}

func TestVultrTimingHelpers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		start := time.Now()
		require.NoError(t, h.v.SlowProvisioning("vcg-*", 30*time.Minute))
		require.NoError(t, h.v.NotActiveWindow("vc2-*", 20*time.Minute))
		assert.Error(t, h.v.SlowProvisioning("[", time.Minute))
		gpu := h.create("vcg-a100-1c-6g-4vram", "ewr", nil)["id"].(string)
		cpu := h.create("vc2-1c-1gb", "ewr", nil)["id"].(string)
		other := h.create("vhf-1c-1gb", "ewr", nil)["id"].(string)

		vultrSleepTo(start, 29*time.Minute)
		assert.Equal(t, "pending", h.get(gpu, false)["status"])
		assert.Equal(t, "active", h.get(cpu, false)["status"])
		assert.Equal(t, "active", h.get(other, false)["status"])
		vultrSleepTo(start, 30*time.Minute)
		assert.Equal(t, "active", h.get(gpu, false)["status"])

		// Both delete once their windows are over.
		vultrSleepTo(start, 10*time.Minute+30*time.Minute)
		h.obj("DELETE", "/v2/instances/"+other, nil, 204)
		h.obj("DELETE", "/v2/instances/"+cpu, nil, 204)

		h2 := newVultrT(t)
		id := h2.create("vc2-1c-1gb", "ewr", nil)["id"].(string)
		h2.v.LockWindow(time.Hour) // applies to existing servers too
		time.Sleep(30 * time.Minute)
		assert.Contains(t, h2.fail("DELETE", "/v2/instances/"+id, nil, 500), "locked")
		time.Sleep(32 * time.Minute)
		h2.obj("DELETE", "/v2/instances/"+id, nil, 204)
	})
}

func TestVultrNotActiveAfterActive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		require.NoError(t, h.v.NotActiveWindow("*", 20*time.Minute))
		h.v.LockWindow(0)
		id := h.create("vc2-1c-1gb", "ewr", nil)["id"].(string)
		time.Sleep(10 * time.Minute)
		assert.Equal(t, "active", h.get(id, false)["status"])
		assert.Equal(t, vultrMsgNotActiveDel, h.fail("DELETE", "/v2/instances/"+id, nil, 500))
		time.Sleep(10 * time.Minute)
		h.obj("DELETE", "/v2/instances/"+id, nil, 204)
	})
}

func TestVultrDestroyOutOfBand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		id := h.create("vc2-1c-1gb", "ewr", nil)["id"].(string)
		require.NoError(t, h.v.DestroyOutOfBand(id))
		assert.Equal(t, "Invalid instance-id.", h.fail("DELETE", "/v2/instances/"+id, nil, 404))
		assert.Error(t, h.v.DestroyOutOfBand(id))
		assert.Error(t, h.v.DestroyOutOfBand("nope"))
		res := h.v.Resources()
		require.Len(t, res, 1)
		assert.Equal(t, "destroyed", res[0].State)
		assert.False(t, res[0].Live())
	})
}
