package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// A give-back repeated late (issue 17 point 3): job 1's GiveBack succeeded
// but the orchestrator did not see the answer, or its queue delivered it
// twice; the repeat arrives after the node was handed out again to job 2.
// It is refused with ErrHandedOutAgain and changes nothing: the node stays
// busy with job 2, Acquire does not hand it out a third time, and the idle
// rules do not release it under job 2 (with MarkIdle, which carries no
// hand-out, all three happen). Job 2's GiveBack then frees it. Whether the
// loop has carried out job 2's busy mark before the late give-back or not.
func TestGiveBackOfAnEndedHandOutIsRefused(t *testing.T) {
	for _, loop := range []string{"job 2's mark carried out", "job 2's mark queued"} {
		t.Run(loop, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{RebuyHoldOff: true})
				e.idleFleet("f", 1, 5*time.Minute, hotType("vm-mi300x-1"))
				stop := e.running()
				defer func() { stop() }()
				job1, err := e.m.Acquire(t.Context(), "f")
				require.NoError(t, err)
				require.NotEmpty(t, job1.HandOut)
				time.Sleep(40 * time.Minute) // past the 30-minute minimum: an idle node goes IdleTimeout after its job
				require.NoError(t, e.m.GiveBack(job1))
				require.NoError(t, e.m.GiveBack(job1), "repeated before the node is taken again: nothing to do")
				if loop == "job 2's mark queued" {
					stop() // no pass carries a mark out until the loop runs again
				}
				job2, err := e.m.Acquire(t.Context(), "f")
				require.NoError(t, err)
				require.Equal(t, job1.ID, job2.ID, "the fleet's only node")
				require.NotEqual(t, job1.HandOut, job2.HandOut, "a token per hand-out")
				if loop != "job 2's mark queued" {
					time.Sleep(time.Minute)
				}
				assert.ErrorIs(t, e.m.GiveBack(job1), fleet.ErrHandedOutAgain, "job 1's give-back, late")
				if loop == "job 2's mark queued" {
					stop = e.running()
				}
				time.Sleep(30 * time.Minute) // 6 IdleTimeouts
				assert.Equal(t, 1, liveOf(e, "hotaisle"), "the node was released under job 2")
				in := e.only("f")
				assert.Equal(t, fleet.StatusBusy, in.Status, "job 2 runs on it")
				assert.Empty(t, in.HandOut, "the token is on what Acquire returns only")
				got, err := e.m.Acquire(t.Context(), "f")
				assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out a third time: %s", got.ID)

				require.NoError(t, e.m.GiveBack(job2), "job 2's own give-back")
				job3, err := e.m.Acquire(t.Context(), "f")
				require.NoError(t, err, "given back by job 2")
				assert.Equal(t, job1.ID, job3.ID)
				assert.ErrorIs(t, e.m.GiveBack(job2), fleet.ErrHandedOutAgain, "job 2's give-back repeated after job 3 took the node")
				require.NoError(t, e.m.GiveBack(job3))
				assert.True(t, e.runUntil(20*time.Minute, func() bool { return liveOf(e, "hotaisle") == 0 }),
					"given back for good: released for idleness")
			})
		})
	}
}

// A MarkIdle (no hand-out) ends the current hand-out, and so does a
// MarkBusy of the node once idle (a job placed otherwise, with none): a
// GiveBack after MarkIdle finds the node idle and answers nil, one after
// that MarkBusy is refused (the node is held otherwise); neither frees the
// node under a later holder. (The job's own MarkBusy, of its node still
// busy, keeps the hand-out: TestGiveBackAfterTheJobsOwnMarkBusy.) GiveBack
// of an Instance not from Acquire (no HandOut) is an error, of an unknown
// rental ErrNotFound.
func TestGiveBackAfterAMarkWithoutHandOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuyHoldOff: true})
		insts := e.idleFleet("f", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		job1, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		e.run(time.Minute)
		require.NoError(t, e.m.MarkIdle(job1.ID))
		assert.NoError(t, e.m.GiveBack(job1), "idle already (queued): nothing to do")
		require.NoError(t, e.m.MarkBusy(job1.ID), "a job placed otherwise")
		assert.ErrorIs(t, e.m.GiveBack(job1), fleet.ErrHandedOutAgain, "marked busy since (queued)")
		e.run(time.Minute)
		assert.ErrorIs(t, e.m.GiveBack(job1), fleet.ErrHandedOutAgain, "marked busy since (carried out)")
		assert.Equal(t, fleet.StatusBusy, e.only("f").Status)

		require.NoError(t, e.m.MarkIdle(job1.ID))
		e.run(time.Minute)
		assert.NoError(t, e.m.GiveBack(job1), "idle already: nothing to do")
		job2, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		e.run(time.Minute)
		assert.ErrorIs(t, e.m.GiveBack(job1), fleet.ErrHandedOutAgain)
		assert.Equal(t, fleet.StatusBusy, e.only("f").Status)

		assert.Error(t, e.m.GiveBack(insts[0]), "not what Acquire returned")
		assert.NotErrorIs(t, e.m.GiveBack(insts[0]), fleet.ErrHandedOutAgain)
		unknown := job2
		unknown.RequestID, unknown.ID = "nosuch", "nosuch"
		assert.ErrorIs(t, e.m.GiveBack(unknown), fleet.ErrNotFound)
		require.NoError(t, e.m.GiveBack(job2))
		e.run(time.Minute)
		assert.Equal(t, fleet.StatusIdle, e.only("f").Status)
	})
}

// The hand-out outlives a restart: the Manager stores it with the node's
// record, so a late give-back of job 1 is refused by the restarted Manager
// too, and job 2's is taken.
func TestGiveBackAfterARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuyHoldOff: true})
		e.idleFleet("f", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		job1, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		e.run(time.Minute)
		require.NoError(t, e.m.GiveBack(job1))
		job2, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		e.run(time.Minute)
		e.m.Close()
		e.m = e.manager(e.store)
		e.run(2 * time.Minute)
		assert.ErrorIs(t, e.m.GiveBack(job1), fleet.ErrHandedOutAgain, "job 1's give-back after the restart")
		got, err := e.m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out while job 2 runs: %s", got.ID)
		require.NoError(t, e.m.GiveBack(job2))
		e.run(time.Minute)
		assert.Equal(t, fleet.StatusIdle, e.only("f").Status)
	})
}

// A node whose job a stop out of band ended (Policy.OnStoppedRestart,
// InstanceRecord.JobStopped) stays under its hand-out: the holder gives it
// back with GiveBack, and Acquire hands it out to job B then; job A's
// give-back repeated after that is refused and job B keeps the node.
func TestGiveBackOfANodeWhoseJobAStopEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OnStopped: fleet.OnStoppedRestart})
		e.idleFleet("f", 1, 10*time.Minute, vultrType("vcg-a100-12c-120g-80vram"))
		stop := e.running()
		defer stop()
		a, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		time.Sleep(5 * time.Minute) // job A runs
		require.NoError(t, e.vultr.HaltOutOfBand(a.ID))
		var rec fleet.InstanceRecord
		for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Second) {
			if rec = recordOf(e.m, a.ID); len(e.eventsOf(fleet.EventInstanceStopped)) > 0 && rec.Instance.Status == fleet.StatusIdle {
				break
			}
		}
		require.Equal(t, fleet.StatusIdle, rec.Instance.Status, "started again and ready")
		require.True(t, rec.JobStopped)
		assert.Equal(t, a.HandOut, rec.HandOut, "still job A's hand-out")
		_, err = e.m.Acquire(t.Context(), "f")
		require.ErrorIs(t, err, fleet.ErrNoIdle, "job A's holder has not given it back")
		require.NoError(t, e.m.GiveBack(a))
		b, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err, "given back: handed out again")
		require.Equal(t, a.ID, b.ID)
		time.Sleep(time.Minute)
		assert.ErrorIs(t, e.m.GiveBack(a), fleet.ErrHandedOutAgain, "job A's give-back, repeated")
		c, err := e.m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out %s, on which job B runs", c.ID)
		assert.False(t, recordOf(e.m, a.ID).JobStopped)
		require.NoError(t, e.m.GiveBack(b))
	})
}
