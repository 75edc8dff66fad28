package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// keepCost prices the next hour beyond what a node has paid, in its
// offer's billing unit.
func TestKeepCostPricesTheNextHourBeyondWhatIsPaid(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	vultr := Offer{Provider: ProviderVultr, PricePerHour: 2.397, MinimumReservation: time.Hour, BillingGranularity: time.Hour}
	vm := Offer{Provider: ProviderHotAisle, PricePerHour: 3.0, MinimumReservation: time.Hour, BillingGranularity: time.Minute}
	bm := Offer{Provider: ProviderHotAisle, PricePerHour: 27.12, MinimumReservation: 8 * time.Hour, BillingGranularity: time.Minute, BareMetal: true}
	for _, c := range []struct {
		name    string
		offer   Offer
		age     time.Duration
		unknown bool
		want    float64
	}{
		{"Vultr, 40 minutes of its first hour left: the next hour whole", vultr, 20 * time.Minute, false, 2.397},
		{"Vultr, in its second hour: the third whole", vultr, 70 * time.Minute, false, 2.397},
		{"Hot Aisle VM, 20 minutes of its minimum left: 40 minutes", vm, 40 * time.Minute, false, 2.0},
		{"Hot Aisle VM, 39m30s left: 20m30s rounded up to 21 minutes", vm, 20*time.Minute + 30*time.Second, false, 1.05},
		{"Hot Aisle VM past its minimum: the hour", vm, 3 * time.Hour, false, 3.0},
		{"Hot Aisle VM of unknown start: the hour", vm, 10 * time.Minute, true, 3.0},
		{"Hot Aisle bare metal, 7 prepaid hours left: nothing", bm, time.Hour, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &InstanceRecord{Instance: Instance{Offer: c.offer, Created: now.Add(-c.age)}, CreatedUnknown: c.unknown}
			assert.InDelta(t, c.want, (&Manager{}).keepCost(r, now), 1e-9)
		})
	}
}
