package fleet_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowStartAgent is an agent whose Start takes a while (a real agent start
// over SSH on a machine that just booted: minutes), and whose checks pass.
type slowStartAgent struct{ start time.Duration }

func (a slowStartAgent) Start(ctx context.Context, _ fleet.Instance) error {
	select {
	case <-time.After(a.start):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (slowStartAgent) Check(context.Context, fleet.Instance) error { return nil }

// Policy.OnStoppedRestart with an Agent: a node handed out by Acquire (job
// A) is powered off out of band; the Manager powers it on again and starts
// its agent (2 minutes here). Job A died with the stop, and its holder
// gives the node back with MarkIdle, as the contract says, while the node
// boots again (status booting, JobStopped set). MarkIdle answers an
// untyped error ("instance ... is booting, not ready": the same words as
// for a node being released, no sentinel saying "try again"), and nothing
// clears JobStopped: once the node is ready again Acquire answers
// ErrNoIdle, for a node its holder has given back, until the idle rules
// release it. Now: the give-back is accepted while the node boots, and the
// node is handed out once ready. Before (tester AR): MarkIdle refused;
// ErrNoIdle from the node's ready again until the idle rules released it
// at its hour's last safe moment (42 min idle, JobStopped true all along,
// never handed out); the orchestrator's next job waits, or (README: grow
// with Apply on ErrNoIdle) buys a second VM hour while this one bills idle.
// Cause: intent.go mark refused a booting node, and markBusy returned
// before clearing JobStopped when the status was not idle/busy.
func TestMarkIdleWhileBootingAfterAStopGivesTheNodeBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OnStopped: fleet.OnStoppedRestart})
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: testOwner,
			Agent: slowStartAgent{start: 2 * time.Minute}})
		s := spec("f", 1, vultrVM("ewr"))
		s.IdleTimeout = 3 * time.Hour
		require.NoError(t, e.m.Apply(t.Context(), s))
		stop := e.running()
		defer stop()
		var a fleet.Instance
		for limit := time.Now().Add(time.Hour); ; time.Sleep(10 * time.Second) {
			require.True(t, time.Now().Before(limit), "no node ready")
			var err error
			if a, err = e.m.Acquire(t.Context(), "f"); err == nil {
				break
			}
		}
		time.Sleep(5 * time.Minute) // job A runs
		require.NoError(t, e.vultr.HaltOutOfBand(a.ID))
		var rec fleet.InstanceRecord
		for limit := time.Now().Add(30 * time.Minute); ; time.Sleep(time.Second) {
			require.True(t, time.Now().Before(limit), "never restarted: %+v", rec.Instance.Status)
			if rec = recordOf(e.m, a.ID); rec.JobStopped && rec.Instance.Status == fleet.StatusBooting {
				break
			}
		}
		markErr := e.m.MarkIdle(a.ID) // job A's holder gives its node back after its job failed
		for limit := time.Now().Add(30 * time.Minute); recordOf(e.m, a.ID).Instance.Status != fleet.StatusIdle; time.Sleep(10 * time.Second) {
			require.True(t, time.Now().Before(limit), "not ready again")
		}
		readyAt := time.Now()
		var err error
		for time.Since(readyAt) < 2*time.Hour {
			if _, err = e.m.Acquire(t.Context(), "f"); !errors.Is(err, fleet.ErrNoIdle) {
				break
			}
			if recordOf(e.m, a.ID).Instance.Status != fleet.StatusIdle {
				break // released by the idle rules without ever being handed out again
			}
			time.Sleep(time.Minute)
		}
		rec = recordOf(e.m, a.ID)
		t.Logf("MarkIdle while booting: %v; %v after the node was ready again: Acquire %v; status %s, JobStopped %v",
			markErr, time.Since(readyAt).Round(time.Minute), err, rec.Instance.Status, rec.JobStopped)
		assert.NoError(t, markErr, "the holder cannot give back a node whose job a stop ended while it boots again")
		assert.NoError(t, err, "a node its holder gave back is not handed out once ready")
		assert.False(t, rec.JobStopped, "JobStopped not cleared by the holder's MarkIdle")
	})
}
