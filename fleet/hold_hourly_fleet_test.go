package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One Manager, fleets on both providers, a fixed re-buy hold (RebuySpares
// 1, RebuyHold 30 min; Policy is per Manager). Policy.RebuySpares holds
// per-minute nodes with a minimum only: a Vultr VM fleet's node, one job
// from ready to jobEnd, no job after, is not held (keeping it past its
// hour buys that hour again), so it goes at its hour's last safe moment,
// billed 1 hour, whether its job ends before or after the Hot Aisle one.
// The Hot Aisle VM fleet next to it is held as configured (job to 35:00,
// kept to 65:00). Holds on main; kept as a guard.
func TestFixedHoldOnAVultrFleet(t *testing.T) {
	for _, jobEnd := range []time.Duration{10 * time.Minute, 40 * time.Minute} {
		t.Run(jobEnd.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute})
				e.idleFleet("v", 1, 5*time.Minute, vultrType(vm))
				e.idleFleet("h", 1, 5*time.Minute, hotType("vm-mi300x-1"))
				stop := e.running()
				defer stop()
				v, err := e.m.Acquire(t.Context(), "v")
				require.NoError(t, err)
				h, err := e.m.Acquire(t.Context(), "h")
				require.NoError(t, err)
				vFrom, hFrom := serverCharge(e, v.ID).From, serverCharge(e, h.ID).From
				vEnd, hEnd := vFrom.Add(jobEnd), hFrom.Add(35*time.Minute)
				if vEnd.Before(hEnd) {
					time.Sleep(time.Until(vEnd))
					require.NoError(t, e.m.GiveBack(v))
				}
				time.Sleep(time.Until(hEnd))
				require.NoError(t, e.m.GiveBack(h))
				if !vEnd.Before(hEnd) {
					time.Sleep(time.Until(vEnd))
					require.NoError(t, e.m.GiveBack(v))
				}
				vc := waitChargeEnds(e, v.ID, 6*time.Hour)
				hc := waitChargeEnds(e, h.ID, 6*time.Hour)
				t.Logf("vultr job to +%v: billed %v, to +%v (%s)", jobEnd, vc.Billed, vc.To.Sub(vc.From).Round(time.Second), vc.Description)
				t.Logf("hot aisle job to +35m: billed %v, to +%v", hc.Billed, hc.To.Sub(hc.From).Round(time.Second))
				assert.Equal(t, time.Hour, vc.Billed, "Vultr node carried into another hour by the Hot Aisle hold")
				assert.LessOrEqual(t, hc.Billed, 66*time.Minute, "Hot Aisle node kept past its hold")
				assert.GreaterOrEqual(t, hc.Billed, 65*time.Minute, "Hot Aisle node not held")
			})
		})
	}
}
