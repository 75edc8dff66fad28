package vultrfake

import (
	"encoding/json"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVultrPlansCatalog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		h.key = "" // public
		m := h.obj("GET", "/v2/plans?type=vcg", nil, http.StatusOK)
		plans := m["plans"].([]any)
		byID := map[string]map[string]any{}
		for _, p := range plans {
			pm := p.(map[string]any)
			assert.Equal(t, "vcg", pm["type"])
			byID[pm["id"].(string)] = pm
		}
		frac := byID["vcg-a100-1c-6g-4vram"]
		require.NotNil(t, frac)
		assert.EqualValues(t, 4, frac["gpu_vram_gb"])
		assert.Equal(t, "NVIDIA_A100", frac["gpu_type"])
		assert.EqualValues(t, 0.123, frac["hourly_cost"])
		require.Contains(t, byID, "vcg-a100-12c-120g-80vram")
		assert.EqualValues(t, 80, byID["vcg-a100-12c-120g-80vram"]["gpu_vram_gb"])
		require.Contains(t, byID, "vcg-l40s-16c-180g-48vram")
		assert.EqualValues(t, len(plans), m["meta"].(map[string]any)["total"])

		all := h.obj("GET", "/v2/plans", nil, http.StatusOK)["plans"].([]any)
		assert.Len(t, all, len(DefaultVultrCatalog().Plans))
		for _, p := range all {
			_, hasGPU := p.(map[string]any)["gpu_type"]
			assert.Equal(t, p.(map[string]any)["type"] == "vcg", hasGPU, "gpu fields only on vcg plans")
		}
		vocG := h.obj("GET", "/v2/plans?type=voc-g", nil, http.StatusOK)["plans"].([]any)
		require.Len(t, vocG, 1)
		assert.Equal(t, "voc-g-4c-16gb-80s-amd", vocG[0].(map[string]any)["id"])
		assert.Equal(t, "Invalid plan type.", h.fail("GET", "/v2/plans?type=gpu", nil, 400))
	})
}

func TestVultrMetalPlansAndRegions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		h.key = ""
		var metal struct {
			Plans []map[string]any `json:"plans_metal"`
		}
		_, data, _ := h.do("GET", "/v2/plans-metal", nil)
		require.NoError(t, json.Unmarshal(data, &metal))
		var mi map[string]any
		for _, p := range metal.Plans {
			if p["id"] == "vbm-256c-2048gb-8-mi300x-gpu" {
				mi = p
			}
			_, hasGPU := p["gpu_type"]
			assert.False(t, hasGPU, "metal plans carry no GPU fields")
		}
		require.NotNil(t, mi)
		assert.EqualValues(t, 17.52, mi["hourly_cost"])
		assert.EqualValues(t, 11773.44, mi["monthly_cost"])
		assert.EqualValues(t, 2097152, mi["ram"])
		assert.EqualValues(t, 256, mi["cpu_threads"])
		assert.Equal(t, "NVMe", mi["type"])

		regions := h.obj("GET", "/v2/regions", nil, http.StatusOK)["regions"].([]any)
		assert.GreaterOrEqual(t, len(regions), 5)
		ewr := regions[0].(map[string]any)
		assert.Equal(t, "ewr", ewr["id"])
		assert.Contains(t, ewr["connectivity"], "public_ip")

		var withMI []string
		for _, r := range regions {
			id := r.(map[string]any)["id"].(string)
			av := h.obj("GET", "/v2/regions/"+id+"/availability?type=vbm", nil, http.StatusOK)
			for _, p := range av["available_plans"].([]any) {
				assert.Regexp(t, `^vbm-`, p)
				if p == "vbm-256c-2048gb-8-mi300x-gpu" {
					withMI = append(withMI, id)
				}
			}
			_, hasMeta := av["meta"]
			assert.False(t, hasMeta)
		}
		assert.GreaterOrEqual(t, len(withMI), 2, "MI300X bare metal in at least two regions")
		assert.Equal(t, "Invalid region.", h.fail("GET", "/v2/regions/xyz/availability", nil, 404))
	})
}

func TestVultrSoldOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		avail := func() []any {
			return h.obj("GET", "/v2/regions/ord/availability", nil, 200)["available_plans"].([]any)
		}
		require.Contains(t, avail(), "vbm-256c-2048gb-8-mi300x-gpu")
		require.NoError(t, h.v.SoldOut("vbm-256c-2048gb-8-mi300x-gpu", "ord"))
		assert.NotContains(t, avail(), "vbm-256c-2048gb-8-mi300x-gpu")
		body := map[string]any{"region": "ord", "plan": "vbm-256c-2048gb-8-mi300x-gpu", "image_id": "docker"}
		assert.Equal(t, "Plan is not available in the selected region.", h.fail("POST", "/v2/bare-metals", body, 400))
		// Still sold in atl.
		body["region"] = "atl"
		h.obj("POST", "/v2/bare-metals", body, http.StatusAccepted)
		require.NoError(t, h.v.Restock("vbm-256c-2048gb-8-mi300x-gpu", "ord"))
		assert.Contains(t, avail(), "vbm-256c-2048gb-8-mi300x-gpu")
		assert.Error(t, h.v.SoldOut("vbm-nope", "ord"))
		assert.Error(t, h.v.SoldOut("vc2-1c-1gb", "nowhere"))

		// A catalog can also ship sold-out plans.
		c := DefaultVultrCatalog()
		c.SoldOut = map[string][]string{"vc2-1c-1gb": {"ewr"}}
		h2 := newVultrT(t, WithVultrCatalog(c))
		av := h2.obj("GET", "/v2/regions/ewr/availability?type=vc2", nil, 200)["available_plans"].([]any)
		assert.NotContains(t, av, "vc2-1c-1gb")
		assert.Contains(t, av, "vc2-1c-2gb")
	})
}

func TestVultrCatalogOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := VultrCatalog{
			Plans:   []VultrPlan{{ID: "vc2-9c-9gb", VCPUCount: 9, RAM: 9216, Type: "vc2", HourlyCost: 1, MonthlyCost: 672, Locations: []string{"zzz"}}},
			Regions: []VultrRegion{{ID: "zzz", City: "Nowhere"}},
		}
		h := newVultrT(t, WithVultrCatalog(c))
		c.Plans[0].ID = "mutated" // the fake keeps its own copy
		plans := h.obj("GET", "/v2/plans", nil, 200)["plans"].([]any)
		require.Len(t, plans, 1)
		assert.Equal(t, "vc2-9c-9gb", plans[0].(map[string]any)["id"])
		assert.Empty(t, h.obj("GET", "/v2/plans-metal", nil, 200)["plans_metal"])
		h.create("vc2-9c-9gb", "zzz", nil)
		assert.Equal(t, "Invalid plan chosen.", h.fail("POST", "/v2/instances",
			map[string]any{"region": "zzz", "plan": "vc2-1c-1gb", "os_id": 1743}, 400))
	})
}
