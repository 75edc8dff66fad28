package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a reader gets from the Store is its own copy, FleetRecord.Jobs
// included (tester X: MemoryStore shared the array with the caller and with
// the Manager, so a reader's write into its copy changed the Manager's job
// history, which it wrote back).
func TestStoreReaderCopyOfJobsIsItsOwn(t *testing.T) {
	t.Run("manager", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, fleet.Policy{})
			stop := e.running()
			e.idleFleet("f", 1, time.Minute, hotType("vm-mi300x-1"))
			in, err := e.m.Acquire(t.Context(), "f")
			require.NoError(t, err)
			time.Sleep(5 * time.Minute) // the fleet's first job
			require.NoError(t, e.m.MarkIdle(in.ID))
			time.Sleep(time.Minute)
			recs, err := e.store.Fleets(t.Context())
			require.NoError(t, err)
			require.Len(t, recs[0].Jobs, 1)
			recs[0].Jobs[0].Used = 0 // the reader's copy
			in, err = e.m.Acquire(t.Context(), "f")
			require.NoError(t, err)
			time.Sleep(time.Minute) // a second job
			require.NoError(t, e.m.MarkIdle(in.ID))
			time.Sleep(time.Minute)
			stop()
			recs, err = e.store.Fleets(t.Context())
			require.NoError(t, err)
			require.Len(t, recs[0].Jobs, 2)
			assert.Equal(t, 5*time.Minute, recs[0].Jobs[0].Used.Round(time.Second), "the first job as the Manager stores it, after a reader wrote into its copy")
		})
	})
}
