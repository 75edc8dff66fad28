package vultrfake

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVultrLedger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t, WithVultrTiming("*", VultrTiming{Destroy: time.Minute}))
		start := time.Now()
		short := h.create("vc2-1c-1gb", "ewr", nil)["id"].(string)                // 0.007/h, 10 min
		hourish := h.create("vcg-a100-3c-30g-20vram", "ewr", nil)["id"].(string)  // 0.599/h, 61 min
		mi := h.create("vbm-256c-2048gb-8-mi300x-gpu", "ord", nil)["id"].(string) // 17.52/h, live
		halted := h.create("vhf-1c-1gb", "ewr", nil)["id"].(string)               // halted bills too

		vultrSleepTo(start, 10*time.Minute)
		h.obj("DELETE", "/v2/instances/"+short, nil, 204)
		h.obj("POST", "/v2/instances/"+halted+"/halt", nil, 204)
		vultrSleepTo(start, 61*time.Minute)
		h.obj("DELETE", "/v2/instances/"+hourish, nil, 204)
		vultrSleepTo(start, 2*time.Hour+59*time.Minute)

		l := h.v.Ledger()
		require.Len(t, l.Charges, 4)
		by := map[string]core.Charge{}
		for _, c := range l.Charges {
			by[c.ResourceID] = c
		}
		assert.Equal(t, 0.01, by[short].USD, "1 h minimum, rounded to cents")
		assert.Equal(t, time.Hour, by[short].Billed)
		assert.False(t, by[short].Live)
		assert.True(t, by[short].To.Equal(start.Add(10*time.Minute)), "billing stops at the DELETE")
		assert.Equal(t, 1.2, by[hourish].USD, "61 min are two started hours")
		assert.Equal(t, 52.56, by[mi].USD, "3 started hours of 17.52")
		assert.True(t, by[mi].Live)
		assert.Equal(t, "bare_metal", by[mi].Kind)
		assert.Equal(t, 17.52, by[mi].RateUSD)
		assert.Equal(t, 0.03, by[halted].USD, "halted still bills: 3 h x 0.009, rounded to cents")
		assert.InDelta(t, 0.01+1.2+52.56+0.03, l.TotalUSD, 0.0001)
	})
}

func TestVultrLedgerMonthlyCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		// vcg-a100-1c-6g-4vram: 0.123/h, at most 90 per month. The bubble
		// starts at 2000-01-01 00:00 UTC: 800 h back is 1999-11-28 16:00.
		id, err := h.v.SeedServer(VultrSeed{Plan: "vcg-a100-1c-6g-4vram", Region: "ewr", Age: 800 * time.Hour})
		require.NoError(t, err)
		c := h.v.Ledger().Charges[0]
		assert.Equal(t, id, c.ResourceID)
		assert.Equal(t, 800*time.Hour, c.Billed)
		assert.Equal(t, 96.89, c.USD, "56 h of November x 0.123, then December's 744 h capped at 90")
		// 700 h within December, over the 672 h of a month's price.
		h.v.Reset()
		_, err = h.v.SeedServer(VultrSeed{Plan: "vbm-256c-2048gb-8-mi300x-gpu", Region: "ord", Age: 700 * time.Hour})
		require.NoError(t, err)
		assert.Equal(t, 11773.44, h.v.Ledger().Charges[0].USD, "700 h capped at monthly_cost")
	})
}

func TestVultrSnapshotAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		vpc := h.vpc("ewr")
		id := h.create("vc2-1c-1gb", "ewr", map[string]any{"label": "L", "tags": []string{"t1"}, "attach_vpc": []string{vpc}})["id"].(string)
		h.obj("POST", "/v2/ssh-keys", map[string]any{"name": "k", "ssh_key": vultrTestKey(t, 5)}, 201)
		require.NoError(t, h.v.SoldOut("vc2-1c-2gb", "ewr"))
		time.Sleep(time.Minute)
		snap := h.v.Snapshot()
		assert.True(t, snap.Time.Equal(time.Now()))
		require.Len(t, snap.Resources, 3)
		assert.Equal(t, "vpc", snap.Resources[0].Kind)
		assert.Equal(t, "instance", snap.Resources[1].Kind)
		assert.Equal(t, "ssh_key", snap.Resources[2].Kind)
		r := snap.Resources[1]
		assert.Equal(t, id, r.ID)
		assert.Equal(t, "L", r.Label)
		assert.Equal(t, []string{"t1"}, r.Tags)
		assert.Equal(t, "vc2-1c-1gb", r.Plan)
		assert.Equal(t, "ewr", r.Region)
		assert.Equal(t, "pending", r.State)
		assert.True(t, r.Live())
		assert.Len(t, snap.Calls, 3)
		assert.Equal(t, "POST /v2/vpcs", snap.Calls[0].Route)
		assert.Equal(t, 201, snap.Calls[0].Status)
		assert.Len(t, snap.Ledger.Charges, 1)

		h.v.Reset()
		assert.Empty(t, h.v.Resources())
		assert.Empty(t, h.v.Calls())
		assert.Empty(t, h.v.Ledger().Charges)
		assert.Equal(t, "Invalid instance-id.", h.fail("GET", "/v2/instances/"+id, nil, 404))
		av := h.obj("GET", "/v2/regions/ewr/availability", nil, 200)["available_plans"]
		assert.Contains(t, av, "vc2-1c-2gb", "Reset restocks")
		// The random source restarts: the same calls give the same ids.
		assert.Equal(t, vpc, h.vpc("ewr"))
	})
}
