package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Vultr server whose label was edited in the console, then the process
// restarted without its Store before writing it again: its owner and fleet
// tags are still there, so it is adopted by them (and relabelled) when its
// fleet is applied again, and collected as an orphan when it is not.
func TestVultrServerWithEditedLabelIsFoundByItsTagsAfterALostStore(t *testing.T) {
	for _, reapply := range []bool{true, false} {
		name := map[bool]string{true: "adopted", false: "collected"}[reapply]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{OrphanGrace: time.Minute, Release: fleet.ReleaseNow})
				require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, vultrVM("ewr"))))
				require.True(t, e.runUntil(10*time.Minute, func() bool { return e.only("f").Status == fleet.StatusIdle }))
				id := e.only("f").ID
				e.m.Close()
				require.NoError(t, e.vultr.RelabelOutOfBand(id, "renamed in the console", nil))
				e.m = e.manager(fleet.NewMemoryStore())
				if reapply {
					require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, vultrVM("ewr"))))
				}
				e.run(2 * time.Hour)
				if reapply {
					assert.Equal(t, []string{id}, idsOf(activeOf(e.m.Instances("f"))), "adopted by its tag, not created again")
					assert.Equal(t, 1, e.liveServers())
				} else {
					assert.Zero(t, e.liveServers(), "collected by its tag")
				}
			})
		})
	}
}
