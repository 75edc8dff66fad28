package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acceptance 2 across a restart with the Store: a Hot Aisle bare-metal
// node (8 h prepaid) ran a job for 2 h and is idle; the Manager restarts
// (same Store) at 4 h; the next job arrives 20 minutes after the node's
// minimum ended. Without the restart the re-buy hold keeps the node (it
// serves the job); with it, is the node still kept rather than a new 8 h
// reservation bought?
func TestTesterSRebuyHoldSurvivesRestart(t *testing.T) {
	{
		restart := true // without the restart the same node serves the job (checked: passes)
		{
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				stop := e.running()
				nodes := e.idleFleet("f", 1, time.Minute, hotType("bm-mi300x-8"))
				created := nodes[0].Created
				in, err := e.m.Acquire(t.Context(), "f")
				require.NoError(t, err)
				time.Sleep(2 * time.Hour)
				require.NoError(t, e.m.MarkIdle(in.ID))
				time.Sleep(2 * time.Hour)
				if restart {
					stop()
					e.m.Close()
					e.m = e.manager(e.store)
					stop = e.running()
				}
				time.Sleep(time.Until(created.Add(8*time.Hour + 20*time.Minute)))
				got, err := e.m.Acquire(t.Context(), "f")
				stop()
				if assert.NoError(t, err, "an idle node 20 min past its minimum; %d live", e.liveServers()) {
					assert.Equal(t, in.ID, got.ID)
				}
				var billed []time.Duration
				for _, c := range servers(e.hot.Ledger().Charges) {
					billed = append(billed, c.Billed)
				}
				t.Logf("ledger so far: %v", billed)
			})
		}
	}
}
