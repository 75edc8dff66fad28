package vultr

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// A plan listed without a price (hourly_cost 0 or absent; gpuhunt
// drops zero-priced plans, and govultr's Plan has no hourly_cost at all)
// must not become a free offer: it is left out (at 0 USD per hour
// it would rank cheapest and pass any MaxPricePerHour).
func TestZeroPricedPlanIsNotAFreeOffer(t *testing.T) {
	_, c := newShaped(t, map[string]reply{
		"GET /v2/plans": {200, `{"plans":[
 {"id":"vcg-a100-12c-120g-80vram","vcpu_count":12,"ram":122880,"disk":1400,"monthly_cost":1750,"hourly_cost":2.397,"type":"vcg","gpu_vram_gb":80,"gpu_type":"NVIDIA_A100","locations":["ewr"]},
 {"id":"vcg-a100-6c-60g-40vram","vcpu_count":6,"ram":61440,"disk":700,"monthly_cost":875,"type":"vcg","gpu_vram_gb":80,"gpu_type":"NVIDIA_A100","locations":["ewr"]},
 {"id":"vcg-a100-3c-30g-20vram","vcpu_count":3,"ram":30720,"disk":350,"monthly_cost":0,"hourly_cost":0,"type":"vcg","gpu_vram_gb":80,"gpu_type":"NVIDIA_A100","locations":["ewr"]}],
 "meta":{"total":3,"links":{"next":"","prev":""}}}`, nil},
		"GET /v2/plans-metal": {200, `{"plans_metal":[],"meta":{"total":0,"links":{"next":"","prev":""}}}`, nil},
		"GET /v2/regions/ewr/availability": {200,
			`{"available_plans":["vcg-a100-12c-120g-80vram","vcg-a100-6c-60g-40vram","vcg-a100-3c-30g-20vram"]}`, nil},
	})
	offers, err := NewProvider(c).Offers(t.Context())
	require.NoError(t, err)
	for _, o := range offers {
		assert.Greater(t, o.PricePerHour, 0.0, "%s is offered for free", o.InstanceType)
	}
	best := fleet.Filter(offers, fleet.Requirements{GPUModel: "A100", MaxPricePerHour: 3})
	require.NotEmpty(t, best)
	assert.Equal(t, "vcg-a100-12c-120g-80vram", best[0].InstanceType, "an unpriced plan ranked cheapest")
}
