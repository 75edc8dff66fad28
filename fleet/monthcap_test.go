package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Vultr's monthly cap (Offer.MonthlyCap, the plan's monthly_cost): the
// hours that start in one calendar month (UTC) cost at most the cap, so a
// node whose month has reached it keeps the rest of the month's hours for
// nothing (paidUntil), and keepCost prices each hour by what it adds to
// the month's bill.
func TestMonthlyCapPaidUntilAndKeepCost(t *testing.T) {
	jan := func(day, h, m int) time.Time { return time.Date(2027, time.January, day, h, m, 0, 0, time.UTC) }
	feb1 := time.Date(2027, time.February, 1, 0, 0, 0, 0, time.UTC)
	gpu := Offer{Provider: ProviderVultr, PricePerHour: 2.397, MonthlyCap: 1750, MinimumReservation: time.Hour, BillingGranularity: time.Hour}
	metal := Offer{Provider: ProviderVultr, BareMetal: true, PricePerHour: 23.92, MonthlyCap: 16074.24, MinimumReservation: time.Hour, BillingGranularity: time.Hour}
	nocap := gpu
	nocap.MonthlyCap = 0
	for _, c := range []struct {
		name      string
		offer     Offer
		created   time.Time
		now       time.Time
		paidUntil time.Time
		keep      float64
	}{
		{"GPU, 731 h started in January (cap reached): free to its first February hour", gpu, jan(1, 0, 0), jan(31, 11, 40), feb1, 0},
		{"GPU, 730 h started: the 731st hour costs what is left of the cap", gpu, jan(1, 0, 0), jan(31, 9, 40), jan(31, 10, 0), 1750 - 730*2.397},
		{"GPU, capped, its last January hour: the first February hour whole", gpu, jan(1, 0, 0), jan(31, 23, 40), feb1, 2.397},
		{"GPU, created in December: only January's hours count", gpu, time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC), jan(31, 11, 40), feb1, 0},
		{"GPU, created on 15 January: the month never reaches the cap", gpu, jan(15, 0, 0), jan(31, 11, 40), jan(31, 12, 0), 2.397},
		{"GPU without a cap: the next hour whole", nocap, jan(1, 0, 0), jan(31, 11, 40), jan(31, 12, 0), 2.397},
		{"bare metal, 673 h started in January (cap 672 h): free to February", metal, jan(1, 0, 0), jan(29, 0, 30), feb1, 0},
		{"bare metal, 672 h started (672 × 23.92 = 16074.24, the cap): free to February", metal, jan(1, 0, 0), jan(28, 23, 30), feb1, 0},
		{"bare metal, 671 h started: the 672nd hour whole (it reaches the cap)", metal, jan(1, 0, 0), jan(28, 22, 30), jan(28, 23, 0), 23.92},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &InstanceRecord{Instance: Instance{Offer: c.offer, Created: c.created}}
			m := &Manager{}
			assert.Equal(t, c.paidUntil, m.paidUntil(r, c.now))
			assert.InDelta(t, c.keep, m.keepCost(r, c.now), 1e-6)
		})
	}
}

// Acquire hands out a node whose month has reached its cap before one that
// pays its hours (handOutFirst: its paid time runs to the month's end), so
// the paying one can go idle and be released.
func TestMonthlyCapHandOutFirst(t *testing.T) {
	gpu := Offer{Provider: ProviderVultr, PricePerHour: 2.397, MonthlyCap: 1750, MinimumReservation: time.Hour, BillingGranularity: time.Hour}
	now := time.Date(2027, time.January, 31, 11, 40, 0, 0, time.UTC)
	capped := &InstanceRecord{Instance: Instance{Offer: gpu, Created: time.Date(2027, time.January, 1, 0, 0, 0, 0, time.UTC)}}
	fresh := &InstanceRecord{Instance: Instance{Offer: gpu, Created: now.Add(-30 * time.Minute)}}
	m := &Manager{}
	assert.True(t, m.handOutFirst(capped, fresh, now))
	assert.False(t, m.handOutFirst(fresh, capped, now))
	assert.Less(t, m.keepCost(capped, now), m.keepCost(fresh, now))
}
