package fleet_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Vultr VM's idle release at 57:00 of its hour meets DELETEs answering
// 500 until 59:30; the holder dies while they are refused (57:30, 58:30,
// 59:00). The replica that takes the fleet over goes on retrying at the
// boundary pace from the stored release, and the delete lands before the
// hour ends: one hour billed. (tester AP: holds.)
func TestRefusedDeleteAcrossAFailoverAtTheHoursEnd(t *testing.T) {
	for _, kill := range []time.Duration{57*time.Minute + 30*time.Second, 58*time.Minute + 30*time.Second, 59 * time.Minute} {
		t.Run(fmt.Sprint(kill), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				rs := apReplicas(t, e, fleet.Policy{}, 2)
				time.Sleep(time.Minute)
				s := spec("rd", 1, vultrVM("ewr"))
				s.IdleTimeout = 5 * time.Minute
				h := apConverge(t, rs, s)
				from := apCharge(t, e).From
				time.Sleep(time.Until(from.Add(56 * time.Minute)))
				require.NoError(t, e.vultr.Inject(sim.Fault{Route: "DELETE /v2/instances/{id}", Status: 500, Duration: 3*time.Minute + 30*time.Second}))
				time.Sleep(time.Until(from.Add(kill)))
				rs.stop(h)
				time.Sleep(3 * time.Hour)
				rs.stopAll()
				apDump(t, e, from)
				c := apCharge(t, e)
				t.Logf("billed %v", c.Billed)
				assert.Equal(t, time.Hour, c.Billed)
			})
		})
	}
}
