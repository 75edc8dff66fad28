package fleet_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hot Aisle VMs (vm-mi300x-1, 30-minute minimum), Policy.RebuySpares 1 and
// RebuyHold 30 min, OnStoppedRestart, IdleTimeout 1 min. Node B (created
// first) runs job B; node A (created 1-2 min later, so more paid time
// left) runs job A. A is powered off out of band at 8 min; the Manager
// powers it on again: job A died, and A stays its holder's until MarkIdle
// (JobStopped), which that holder has not sent yet. Job B ends at 12 min
// (MarkIdle). The one spare the hold keeps is the first idle node in
// Acquire's order — A, which Acquire does not hand out — so B, the node
// that could serve the next job, is released at its minimum's end. A new
// job at 40 min: Acquire answers ErrNoIdle (the orchestrator grows the
// fleet and buys a new 30-minute minimum, and its job waits a boot) while
// the held spare A bills its 30-minute hold for nobody.
// Now: the spare is a node Acquire can hand out (B kept; the job at
// 40 min gets it). Before (tester AR): B released at ~30 min, ErrNoIdle at 40 min.
// Cause: rebuy.go held counted idle nodes Acquire will not hand out
// (JobStopped; likewise agent path down, not listed since a restart).
func TestRebuySpareIsANodeAcquireWillHandOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute, OnStopped: fleet.OnStoppedRestart})
		stop := e.running()
		defer stop()
		t0 := time.Now()
		at := func(d time.Duration) { time.Sleep(time.Until(t0.Add(d))) }
		s := spec("f", 1, hotType("vm-mi300x-1"))
		s.IdleTimeout = time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		acq := func() fleet.Instance {
			for limit := time.Now().Add(time.Hour); ; time.Sleep(5 * time.Second) {
				require.True(t, time.Now().Before(limit), "no node ready")
				if in, err := e.m.Acquire(t.Context(), "f"); err == nil {
					return in
				}
			}
		}
		b := acq()
		s.Nodes = 2
		require.NoError(t, e.m.Apply(t.Context(), s))
		a := acq()
		require.NotEqual(t, a.ID, b.ID)
		at(8 * time.Minute)
		require.NoError(t, e.hot.HaltOutOfBand(a.ID))
		for limit := time.Now().Add(20 * time.Minute); !recordOf(e.m, a.ID).JobStopped; time.Sleep(5 * time.Second) {
			require.True(t, time.Now().Before(limit), "A not started again (JobStopped)")
		}
		at(12 * time.Minute)
		require.NoError(t, e.m.MarkIdle(b.ID))
		at(40 * time.Minute)
		rb := recordOf(e.m, b.ID)
		got, err := e.m.Acquire(t.Context(), "f")
		t.Logf("at 40 min: B %s; A %s (JobStopped %v); Acquire %q %v", rb.Instance.Status,
			recordOf(e.m, a.ID).Instance.Status, recordOf(e.m, a.ID).JobStopped, got.ID, err)
		assert.False(t, errors.Is(err, fleet.ErrNoIdle), "the next job finds no node while the spare held is one Acquire does not hand out")
		assert.NotEqual(t, fleet.StatusTerminated, rb.Instance.Status, "B, which could serve the next job, was released")
	})
}
