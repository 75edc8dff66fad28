package costopt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBillingUnits(t *testing.T) {
	m := time.Minute
	cases := []struct {
		b     Billing
		alive time.Duration
		units int64
	}{
		{VultrVM(), 0, 1},                       // one hour minimum
		{VultrVM(), time.Second, 1},             // started hour
		{VultrVM(), time.Hour, 1},               // exactly one hour
		{VultrVM(), time.Hour + time.Second, 2}, // a second into the second hour
		{VultrBareMetal(), 150 * m, 3},
		{HotAisleVM(), 5 * m, 30},              // 30-minute minimum reservation
		{HotAisleVM(), 30*m + time.Second, 31}, // started minute
		{HotAisleVM(), -time.Hour, 30},         // negative alive time counts as zero
		{HotAisleBareMetal(), 9 * time.Hour, 540},
		{HotAisleBareMetal(), time.Hour, 480}, // 8 hours prepaid
	}
	for _, c := range cases {
		assert.Equal(t, c.units, c.b.Units(c.alive), "%s alive %v", c.b.Name, c.alive)
	}
}

func TestBillingCost(t *testing.T) {
	assert.InDelta(t, 2*2.397, VultrVM().Cost(61*time.Minute), 1e-9)
	assert.InDelta(t, 17.52, VultrBareMetal().Cost(40*time.Minute), 1e-9)
	assert.InDelta(t, 2.99/2, HotAisleVM().Cost(time.Minute), 1e-9)
	assert.InDelta(t, 8*27.12, HotAisleBareMetal().Cost(10*time.Minute), 1e-9)
	assert.InDelta(t, 27.12*601/60, HotAisleBareMetal().Cost(600*time.Minute+time.Second), 1e-9)
}

func TestBillingKinds(t *testing.T) {
	kinds := Kinds()
	require.Len(t, kinds, 4)
	for _, k := range kinds {
		require.NoError(t, k.Validate(), k.Name)
	}
	assert.Equal(t, []string{"Vultr VM", "Vultr bare metal", "Hot Aisle VM", "Hot Aisle bare metal"},
		[]string{kinds[0].Name, kinds[1].Name, kinds[2].Name, kinds[3].Name})
}

func TestBillingValidate(t *testing.T) {
	ok := HotAisleVM()
	bad := map[string]func(b *Billing){
		"zero unit":         func(b *Billing) { b.Unit = 0 },
		"negative minimum":  func(b *Billing) { b.Minimum = -time.Minute },
		"minimum off units": func(b *Billing) { b.Minimum = 90 * time.Second },
		"negative price":    func(b *Billing) { b.PricePerHour = -1 },
		"negative boot":     func(b *Billing) { b.BootTime = -time.Second },
	}
	for name, spoil := range bad {
		b := ok
		spoil(&b)
		assert.Error(t, b.Validate(), name)
	}
	ok.Minimum = 0
	assert.NoError(t, ok.Validate(), "no minimum is allowed")
}
