package sim_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

// Billing: per started minute at OnDemandPrice, never under the minimum;
// live servers are charged up to now.
func TestHotAisleLedger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		one := x.provision(1) // 299 cents/h, 30 min minimum
		eight := x.provision(8)
		time.Sleep(10 * time.Minute)
		c := haCharge(t, x.h, one.Name)
		assert.True(t, c.Live)
		assert.Equal(t, 30*time.Minute, c.Billed, "the minimum while under it")
		assert.InDelta(t, 2.99/2, c.USD, 1e-9)
		assert.Equal(t, 2.99, c.RateUSD)
		assert.Equal(t, "vm-mi300x-1", c.Plan)
		time.Sleep(80*time.Minute + time.Second) // 90 min and 1 s
		c = haCharge(t, x.h, one.Name)
		assert.Equal(t, 91*time.Minute, c.Billed)
		assert.InDelta(t, 2.99*91/60, c.USD, 1e-9)
		assert.InDelta(t, 23.92*91/60, haCharge(t, x.h, eight.Name).USD, 1e-9)
		l := x.h.Ledger()
		assert.InDelta(t, (2.99+23.92)*91/60, l.TotalUSD, 1e-6)
		assert.Regexp(t, `^\d+(\.\d{1,6})?$`, strconv.FormatFloat(l.TotalUSD, 'f', -1, 64), "no float noise in the total")

		var bal struct {
			Available int64  `json:"available_balance"`
			Hourly    int64  `json:"hourly_rate"`
			Runout    string `json:"estimated_runout_time"`
		}
		x.ok("GET", haTeamPath+"balance/", nil, 200, &bal)
		assert.Equal(t, int64(sim.DefaultHotAisleBalanceCents)-int64(l.TotalUSD*100+0.999), bal.Available)
		assert.Equal(t, int64(299+2392), bal.Hourly)
		runout, err := time.Parse(time.RFC3339, bal.Runout)
		require.NoError(t, err)
		assert.WithinDuration(t, time.Now().Add(time.Duration(float64(bal.Available)/2691*float64(time.Hour))),
			runout, time.Second)
	})
}

func TestHotAisleSnapshotAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t, sim.WithSeed(7))
		vm := x.provision(1)
		bm := x.reserve("b")
		_, line := haKeyPair(t, 3, "k")
		x.ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 200, nil)
		require.NoError(t, x.h.Inject(sim.Fault{Route: "GET /api/user/", Status: 500}))
		snap := x.h.Snapshot()
		assert.Equal(t, time.Now(), snap.Time)
		require.Len(t, snap.Resources, 3)
		assert.Equal(t, []string{"virtual_machine", "bare_metal", "ssh_key"},
			[]string{snap.Resources[0].Kind, snap.Resources[1].Kind, snap.Resources[2].Kind})
		assert.Len(t, snap.Ledger.Charges, 2)
		assert.Len(t, snap.Calls, 3)
		_, err := json.Marshal(snap)
		require.NoError(t, err)

		x.h.Reset()
		assert.Empty(t, x.h.Resources())
		assert.Empty(t, x.h.Calls())
		assert.Empty(t, x.h.Ledger().Charges)
		x.ok("GET", "/api/user/", nil, 200, nil) // fault cleared
		var keys []haKeyJSON
		x.ok("GET", "/api/user/ssh_keys/", nil, 200, &keys)
		assert.Empty(t, keys)
		assert.Nil(t, x.h.Network().Host(vm.IPAddress+":22"), "SSH hosts removed")
		// Same seed, same calls, same answers.
		assert.Equal(t, vm, x.provision(1))
		assert.Equal(t, bm.Name, x.reserve("b").Name)
		other := haNew(t, sim.WithSeed(8)).provision(1)
		assert.NotEqual(t, vm.Name+vm.IPAddress, other.Name+other.IPAddress)
	})
}
