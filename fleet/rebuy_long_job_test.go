package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A long job that ends after 64 shorter ones started is kept in the fleet's
// history (tester AH: kept in order of start, it was cut the moment it was
// added): jobs are kept in the order they ended.
func TestRebuyHistoryKeepsALongJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("train", 2, hotType("vm-mi300x-1"))))
		stop := e.running()
		time.Sleep(15 * time.Minute)
		a, err := e.m.Acquire(t.Context(), "train")
		require.NoError(t, err)
		b, err := e.m.Acquire(t.Context(), "train")
		require.NoError(t, err)
		aStart := time.Now()
		time.Sleep(time.Minute)
		require.NoError(t, e.m.MarkIdle(b.ID))
		for i := 0; i < 70; i++ {
			time.Sleep(time.Minute)
			require.NoError(t, e.m.MarkBusy(b.ID))
			time.Sleep(time.Minute)
			require.NoError(t, e.m.MarkIdle(b.ID))
		}
		require.NoError(t, e.m.MarkIdle(a.ID))
		time.Sleep(time.Minute)
		jobs := storedJobs(t, e.store, "train")
		stop()
		found := false
		for _, j := range jobs {
			if j.Start.Equal(aStart) {
				found = true
			}
		}
		t.Logf("A's job %v..%v; stored jobs %d, first start %v, last %v", aStart.Format("15:04"), time.Now().Format("15:04"), len(jobs), jobs[0].Start.Format("15:04"), jobs[len(jobs)-1].Start.Format("15:04"))
		assert.True(t, found, "the job that just ended, started %v ago, within the 3 h replay window", time.Since(aStart))
	})
}
