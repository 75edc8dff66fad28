package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tester AV: MarkBusy's doc (MarkIdle: "Errors as MarkBusy") promises "an
// error for an instance that is not ready (one being released included:
// its Release, or its fleet's Delete, recorded whether carried out yet or
// not)". A node whose job a stop out of band ended
// (InstanceRecord.JobStopped, Policy.OnStoppedRestart) keeps JobStopped
// when it is released, and mark let MarkIdle through for it whatever its
// status (intent.go: !(kind == intentIdle && r.JobStopped)): MarkIdle of
// that node, being released or gone, answered nil and did nothing (before;
// now only while it boots again).
func TestMarkIdleOfAReleasedStoppedJobNodeAnswersAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OnStopped: fleet.OnStoppedRestart})
		in := e.idleFleet("f", 1, 10*time.Minute, vultrType("vcg-a100-12c-120g-80vram"))[0]
		stop := e.running()
		defer stop()
		a, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		require.Equal(t, in.ID, a.ID)
		time.Sleep(5 * time.Minute)
		require.NoError(t, e.vultr.HaltOutOfBand(a.ID))
		var rec fleet.InstanceRecord
		for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Second) {
			if rec = recordOf(e.m, a.ID); len(e.eventsOf(fleet.EventInstanceStopped)) > 0 && rec.Instance.Status == fleet.StatusIdle {
				break
			}
		}
		require.True(t, rec.JobStopped, "its job ended with the stop")
		_, err = e.m.Release(t.Context(), a.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
		require.NoError(t, err)
		time.Sleep(30 * time.Second)
		rec = recordOf(e.m, a.ID)
		require.Contains(t, []fleet.Status{fleet.StatusTerminating, fleet.StatusTerminated}, rec.Instance.Status)
		assert.Error(t, e.m.MarkIdle(a.ID), "MarkIdle of a node being released (%s) answered nil", rec.Instance.Status)
		time.Sleep(2 * time.Hour)
		rec = recordOf(e.m, a.ID)
		require.Equal(t, fleet.StatusTerminated, rec.Instance.Status)
		assert.Error(t, e.m.MarkIdle(a.ID), "MarkIdle of a terminated node answered nil")
	})
}
