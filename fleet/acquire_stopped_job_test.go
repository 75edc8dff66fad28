package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Policy.OnStoppedRestart: a node handed out by Acquire (job A) is powered
// off out of band and powered on again by the Manager; job A died with the
// stop. The node is idle again but stays job A's holder's until it gives
// it back with MarkIdle (InstanceRecord.JobStopped): Acquire hands it out
// only then, and once only. Before (tester AO): Acquire handed it to job B
// 6m40s after the stop; job A's holder then did what the contract says for
// its failed job (MarkIdle), which freed the node under job B, and a third
// Acquire handed it to job C: two jobs on one node.
func TestAcquireWaitsForTheHolderOfANodeWhoseJobAStopEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OnStopped: fleet.OnStoppedRestart})
		in := e.idleFleet("f", 1, 10*time.Minute, vultrType("vcg-a100-12c-120g-80vram"))[0]
		stop := e.running()
		defer stop()
		a, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		require.Equal(t, in.ID, a.ID)
		time.Sleep(5 * time.Minute) // job A runs
		require.NoError(t, e.vultr.HaltOutOfBand(a.ID))
		var rec fleet.InstanceRecord
		for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Second) {
			_, err = e.m.Acquire(t.Context(), "f")
			require.ErrorIs(t, err, fleet.ErrNoIdle, "job A's node handed out again before its holder gave it back")
			if rec = recordOf(e.m, a.ID); len(e.eventsOf(fleet.EventInstanceStopped)) > 0 && rec.Instance.Status == fleet.StatusIdle {
				break
			}
		}
		require.Equal(t, fleet.StatusIdle, rec.Instance.Status, "started again and ready")
		assert.True(t, rec.JobStopped, "its job ended with the stop; its holder has not given it back")
		require.NoError(t, e.m.MarkIdle(a.ID)) // job A's holder gives back its node after its job failed
		b, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err, "given back: handed out again")
		assert.Equal(t, a.ID, b.ID)
		time.Sleep(time.Minute)
		c, err := e.m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out %s, on which job B runs", c.ID)
		assert.False(t, recordOf(e.m, a.ID).JobStopped)
	})
}

// recordOf is the record of the instance with provider id id.
func recordOf(m *fleet.Manager, id string) fleet.InstanceRecord {
	for _, r := range m.Records() {
		if r.Instance.ID == id {
			return r
		}
	}
	return fleet.InstanceRecord{}
}
