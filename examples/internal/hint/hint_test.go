package hint

import (
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
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
	assert.Equal(t, []Relaxation{{Flag: "region", What: "the region", Matches: 1}, {Flag: "all", What: "hiding sold-out offers", Matches: 1}},
		Relax(r, offers))
}
