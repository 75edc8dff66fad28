package hint

import (
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNearest(t *testing.T) {
	known := []string{"ord", "ewr", "atl", "us-michigan-1", "nrt"}
	assert.Equal(t, []string{"ord", "ewr"}, Nearest("odr", known, 2), "a swap is one edit")
	assert.Equal(t, []string{"MI300X"}, Nearest("mi300", []string{"H100", "MI300X", "A100"}, 1))
	assert.Empty(t, Nearest("x", nil, 3))
	assert.Equal(t, 3, distance("kitten", "sitting"))
}

var offers = []fleet.Offer{
	{Provider: "vultr", Region: "ord", InstanceType: "vbm-8-mi300x", BareMetal: true, PricePerHour: 17.52, Available: true,
		GPU: fleet.GPU{Vendor: "AMD", Model: "MI300X", Count: 8}, SupportsVPC: true},
	{Provider: "vultr", Region: "ewr", InstanceType: "vcg-a100-1", PricePerHour: 2.4, Available: true,
		GPU: fleet.GPU{Vendor: "NVIDIA", Model: "A100", Count: 1}},
	{Provider: "vultr", Region: "atl", InstanceType: "vcg-a100-1", PricePerHour: 2.4,
		GPU: fleet.GPU{Vendor: "NVIDIA", Model: "A100", Count: 1}},
}

func TestUnknownNamesTheValueAndTheNearest(t *testing.T) {
	for _, tc := range []struct {
		r    fleet.Requirements
		want string
	}{
		{fleet.Requirements{Providers: []string{"vultr"}, InstanceTypes: []string{"vbm-8-mi30x"}},
			`unknown Vultr plan "vbm-8-mi30x"; nearest: vbm-8-mi300x, vcg-a100-1`},
		{fleet.Requirements{Regions: []string{"ord", "nowhere"}}, `unknown region "nowhere"; nearest: ewr, ord, atl`},
		{fleet.Requirements{GPUModel: "H100"}, `unknown GPU model "H100"; nearest: A100, MI300X`},
		{fleet.Requirements{GPUVendor: "intel"}, `unknown GPU vendor "intel"; nearest: AMD, NVIDIA`},
	} {
		err := Unknown(tc.r, offers)
		if assert.Error(t, err, "%+v", tc.r) {
			assert.Equal(t, tc.want, err.Error())
		}
	}
	assert.NoError(t, Unknown(fleet.Requirements{GPUModel: "mi300x", GPUVendor: "amd", Regions: []string{"atl"}}, offers),
		"known names, case ignored for GPUs")
}

func TestRelaxNamesTheFiltersToDrop(t *testing.T) {
	r := fleet.Requirements{GPUModel: "A100", Regions: []string{"atl"}, MaxPricePerHour: 1}
	assert.Empty(t, fleet.Filter(offers, r))
	assert.Empty(t, Relax(r, offers), "two filters exclude each offer: none alone helps")
	r.MaxPricePerHour = 0
	got := Relax(r, offers)
	require.Len(t, got, 2)
	assert.Equal(t, Relaxation{Flag: "region", What: "the region", Matches: 1, Types: got[0].Types}, got[0])
	assert.Equal(t, Relaxation{Flag: "all", What: "hiding sold-out offers", Matches: 1, Types: got[1].Types}, got[1])
	for _, x := range got {
		require.Len(t, x.Types, 1, "the one matching offer's type")
		assert.NotEmpty(t, x.Types[0])
	}
}

func TestNearestPlansPreferTheSameFamily(t *testing.T) {
	known := []string{"vc2-4c-32gb", "vbm-24c-256gb-amd", "vbm-112c-2048gb-8-h100-gpu", "vc2-8c-32gb"}
	assert.Equal(t, []string{"vbm-24c-256gb-amd", "vbm-112c-2048gb-8-h100-gpu", "vc2-4c-32gb"}, nearestPlans("vbm-4c-32gb", known, 3))
	assert.Empty(t, nearestPlans("vbm-4c-32gb", nil, 3))
}
