package hotaisle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// OnDemandPrice is not required by the spec (the official CLI marks it
// omitempty: "may be absent or 0"). A row without it is left out: at 0 USD
// per hour it would rank cheapest and pass any MaxPricePerHour.
func TestUnpricedVMTypeIsNotAFreeOffer(t *testing.T) {
	_, c := newShaped(t, map[string]reply{
		"GET /api/teams/acme/virtual_machines/available/": {200, `[
 {"Quantity": 3, "MinimumReservationMinutes": 30, "OnDemandPrice": 299,
  "Specs": {"cpu_cores": 13, "ram_capacity": 240518168576, "disk_capacity": 13194139533312,
   "cpus": {"count": 1, "manufacturer": "Intel", "model": "Xeon Platinum 8470", "cores": 13, "frequency": 2000000000},
   "gpus": [{"count": 1, "manufacturer": "AMD", "model": "MI300X"}]}},
 {"Quantity": 1, "MinimumReservationMinutes": 60,
  "Specs": {"cpu_cores": 26, "ram_capacity": 481036337152, "disk_capacity": 13194139533312,
   "cpus": {"count": 1, "manufacturer": "Intel", "model": "Xeon Platinum 8470", "cores": 26, "frequency": 2000000000},
   "gpus": [{"count": 2, "manufacturer": "AMD", "model": "MI300X"}]}}]`},
	})
	offers, err := NewProvider(c).Offers(t.Context())
	require.NoError(t, err)
	for _, o := range offers {
		assert.Greater(t, o.PricePerHour, 0.0, "%s is offered for free", o.InstanceType)
	}
	best := fleet.Filter(offers, fleet.Requirements{GPUModel: "MI300X", MaxPricePerHour: 4})
	require.NotEmpty(t, best)
	assert.Equal(t, "vm-mi300x-1", best[0].InstanceType, "an unpriced row ranked cheapest")
}
