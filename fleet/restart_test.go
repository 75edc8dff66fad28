package fleet_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Manager restarted with the same Store in the middle of a refused
// release resumes it: same instance records, the release still pending,
// nothing created again, everything gone in the end.
func TestRestartWithTheSameStoreResumesReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), spec("keep", 2, vultrVM("ewr"))))
		e.run(2 * time.Minute) // active, and locked for 5 more minutes
		require.NoError(t, e.m.Delete(t.Context(), "keep"))
		e.run(time.Minute)
		before := e.m.Records()
		require.Len(t, before, 2)
		for _, r := range before {
			require.Equal(t, fleet.StatusTerminating, r.Instance.Status)
		}
		e.m.Close()
		e.m = e.manager(e.store) // the process restarts with its store
		assert.Equal(t, []string{"keep"}, names(e.m.Fleets()), "the store is read at once")
		require.True(t, e.runUntil(time.Hour, func() bool { return e.count(fleet.EventFleetDeleted) == 1 }))
		after := e.m.Records()
		require.Len(t, after, 2)
		for i := range after {
			assert.Equal(t, before[i].Instance.ID, after[i].Instance.ID)
			assert.Equal(t, fleet.StatusTerminated, after[i].Instance.Status)
		}
		assert.Equal(t, 2, calls(e.vultr.Calls(), "POST /v2/instances", 0), "nothing created again")
		e.assertNothingLeft()
	})
}

func names(specs []fleet.Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// The Manager is safe for concurrent use: passes race the public calls.
func TestManagerConcurrentUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), spec("c", 3, hotType("vm-mi300x-1"))))
		var wg sync.WaitGroup
		wg.Go(func() { e.run(10 * time.Minute) })
		for w := range 4 {
			wg.Go(func() {
				for i := range 40 {
					for _, inst := range e.m.Instances("c") {
						if (i+w)%2 == 0 {
							_ = e.m.MarkBusy(inst.ID)
						} else {
							_ = e.m.MarkIdle(inst.ID)
						}
					}
					_ = e.m.Apply(t.Context(), spec("c", 3+i%2, hotType("vm-mi300x-1")))
					_ = e.m.Fleets()
					_ = e.m.Records()
					time.Sleep(7 * time.Second)
				}
			})
		}
		wg.Wait()
		require.NoError(t, e.m.Delete(t.Context(), "c"))
		require.True(t, e.runUntil(time.Hour, func() bool { return e.count(fleet.EventFleetDeleted) == 1 }))
		e.assertNothingLeft()
	})
}
