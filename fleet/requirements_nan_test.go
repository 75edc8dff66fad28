package fleet_test

import (
	"math"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
)

// A size or price that is NaN or infinite is not a requirement (tester AA:
// a cap computed as budget / hours with zero hours is NaN, which compared
// false with every price and rented the 17.52 USD/h bare metal).
func TestRequirementsRefuseNaNAndInfinities(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, r := range []fleet.Requirements{{MaxPricePerHour: v}, {MinGPUMemoryGiB: v}, {MinMemoryGiB: v}, {MinDiskGiB: v}} {
			assert.Error(t, r.Validate(), "%+v", r)
		}
	}
	assert.NoError(t, fleet.Requirements{MaxPricePerHour: 30, MinMemoryGiB: 0.5}.Validate())
	offers, err := fleet.NewCatalog(nil, 0).Offers(t.Context(), fleet.Requirements{MaxPricePerHour: math.NaN()})
	assert.ErrorIs(t, err, fleet.ErrInvalidSpec, "a NaN cap lists nothing")
	assert.Empty(t, offers)
}
