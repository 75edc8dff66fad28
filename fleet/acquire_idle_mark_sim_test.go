package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MarkIdle then Acquire at once (acquire_idle_mark_test.go) on the sims
// with Run going: a job ends on the fleet's only node
// 10 minutes into its 30-minute minimum; the orchestrator gives it back
// with MarkIdle and asks Acquire for its next job at once, growing the
// fleet by one node when Acquire answers ErrNoIdle ("no idle instance").
// Expected: the node just given back runs the job, one machine billed 30
// minutes (without the re-buy hold, which would keep it past its minimum).
// Got: a second machine bought and billed its minimum.
func TestMarkIdleThenAcquireBuysNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuyHoldOff: true})
		e.idleFleet("f", 1, time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		x, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		time.Sleep(10 * time.Minute)
		require.NoError(t, e.m.MarkIdle(x.ID))
		next, err := e.m.Acquire(t.Context(), "f")
		if err != nil {
			require.ErrorIs(t, err, fleet.ErrNoIdle)
			s := e.m.Fleets()[0]
			s.Nodes++
			require.NoError(t, e.m.Apply(t.Context(), s))
			for ; err != nil; next, err = e.m.Acquire(t.Context(), "f") {
				time.Sleep(10 * time.Second)
			}
		}
		time.Sleep(5 * time.Minute)
		require.NoError(t, e.m.MarkIdle(next.ID))
		time.Sleep(3 * time.Hour)
		stop()
		var total time.Duration
		for _, c := range servers(e.hot.Ledger().Charges) {
			total += c.Billed
		}
		assert.Len(t, servers(e.hot.Ledger().Charges), 1, "machines bought (the job got %s; the first job ran on %s)", next.ID, x.ID)
		assert.Equal(t, 30*time.Minute, total, "billed")
	})
}
