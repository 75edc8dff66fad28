package fleet_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// releasedUnderAJob sets up the give-back-in-release cases: a Hot Aisle
// team limited to one VM (the VM stock is 1), fleet "a" (one VM, 30-min
// minimum) hands its node X out to a job; at 2:00 after X's billing start
// X is released under the job (how: "release", fleet "a" applied with no
// node, so that it wants no replacement, then Release(X); "delete",
// Delete("a")) — its release waits for the minimum's end (paid anyway)
// and, a job running on it, does not give way; at 3:00 fleet "b" applies
// one VM and is refused for the team's limit. It returns the env, X, X's
// billing start, when b asked, and the running loop's stop.
func releasedUnderAJob(t *testing.T, how string) (*env, fleet.Instance, time.Time, time.Time, func()) {
	t.Helper()
	e := newEnv(t, fleet.Policy{}, sim.WithHotAisleLimits(1, 10))
	e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
	stop := e.running()
	x, err := e.m.Acquire(t.Context(), "a")
	require.NoError(t, err)
	from := serverCharge(e, x.ID).From
	time.Sleep(time.Until(from.Add(2 * time.Minute)))
	if how == "delete" {
		require.NoError(t, e.m.Delete(t.Context(), "a"))
	} else { // no node wanted first: no replacement is tried (and refused) before b asks
		s := spec("a", 0, hotType("vm-mi300x-1"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		at, err := e.m.Release(t.Context(), x.ID)
		require.NoError(t, err)
		require.True(t, at.After(time.Now().Add(20*time.Minute)), "the release waits for the minimum's end: %v", at)
	}
	time.Sleep(time.Until(from.Add(3 * time.Minute)))
	s := spec("b", 1, hotType("vm-mi300x-1"))
	s.IdleTimeout = 5 * time.Minute
	require.NoError(t, e.m.Apply(t.Context(), s))
	asked := time.Now()
	for deadline := asked.Add(5 * time.Minute); len(e.eventsOf(fleet.EventCreatesRefused)) == 0; time.Sleep(time.Second) {
		require.True(t, time.Now().Before(deadline), "b's create was not refused for the limit")
	}
	return e, x, from, asked, stop
}

// A node released under its job (Release, or its fleet's Delete) whose
// release waits for its 30-min minimum's end does not give way to another
// fleet refused its stock while the job runs (Termination.Busy); the job's
// GiveBack at 12:00 tells the Manager the job ended: it answers nil, the
// release stands, and from then on the node gives way like any waiting
// release — released at once with force (nothing more paid) for fleet "b",
// refused since 3:00 for the team's one-VM limit. b is served at about the
// job's end, ~10 min after it asked, not at X's minimum's end.
//
// (before the fix: GiveBack, and MarkIdle, of a node in release answered
// "terminating, not ready", the Manager never learnt the job ended, and X
// waited for its minimum's end: b was served after 28 to 37 min here,
// 24 to 26 reported; now 9m30s.)
func TestReleasedUnderAJobGivesWayOnceGivenBack(t *testing.T) {
	for _, how := range []string{"release", "delete"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, x, from, asked, stop := releasedUnderAJob(t, how)
				defer stop()
				time.Sleep(time.Until(from.Add(12 * time.Minute)))
				assert.Empty(t, yieldedTo(e, "b", asked), "X gave way under its job")
				assert.True(t, serverCharge(e, x.ID).Live, "X released under its job")
				assert.NoError(t, e.m.GiveBack(x), "the job's give-back of a node whose release waits")
				wait := untilServed(t, e, "b", asked, 2*time.Hour)
				logYieldEvents(t, e, from)
				c := serverCharge(e, x.ID)
				t.Logf("%s: b served after %v (+%v); X billed %v (%s)", how, wait.Round(time.Second),
					time.Since(from).Round(time.Second), c.Billed, c.Description)
				assert.LessOrEqual(t, wait, 13*time.Minute, "%s: b waited %v for the stock of X, whose job ended at 12:00", how, wait)
				assert.Len(t, yieldedTo(e, "b", asked), 1, "%s: X gives way to b once its job is given back", how)
				assert.False(t, c.Live, "X still billed")
				assert.LessOrEqual(t, c.Billed, 30*time.Minute, "X billed past its minimum")
			})
		})
	}
}

// The job's end is told by MarkIdle too (a node placed with MarkBusy, or
// an orchestrator that marks): fleet a is deleted under the job as above,
// MarkIdle at 12:00 answers nil, and X gives way to b at once.
func TestReleasedUnderAJobGivesWayOnceMarkedIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, x, from, asked, stop := releasedUnderAJob(t, "delete")
		defer stop()
		time.Sleep(time.Until(from.Add(12 * time.Minute)))
		assert.NoError(t, e.m.MarkIdle(x.ID), "the job's end, marked, of a node whose release waits")
		wait := untilServed(t, e, "b", asked, 2*time.Hour)
		t.Logf("b served after %v", wait)
		assert.LessOrEqual(t, wait, 13*time.Minute, "b waited %v for the stock of X, whose job ended at 12:00", wait)
		assert.Len(t, yieldedTo(e, "b", asked), 1)
	})
}

// A give-back of a node in release checks its hand-out as on a node not
// in release: fleet "a"'s one Hot Aisle VM X runs job 1 (given back), then
// job 2, under which X is released at 2:00 (its release waits for the
// minimum's end). Job 1's give-back, late, is refused with
// ErrHandedOutAgain and changes nothing (X's release still counts job 2:
// Termination.Busy, its hand-out kept); MarkBusy stays refused; job 2's
// give-back answers nil and ends the job, and repeated it answers nil and
// changes nothing. The release stands: X goes at its minimum's end, and a
// give-back after that answers ErrNotFound.
func TestGiveBackOfANodeWhoseReleaseWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		defer stop()
		job1, err := e.m.Acquire(t.Context(), "a")
		require.NoError(t, err)
		from := serverCharge(e, job1.ID).From
		require.NoError(t, e.m.GiveBack(job1))
		job2, err := e.m.Acquire(t.Context(), "a")
		require.NoError(t, err)
		require.Equal(t, job1.ID, job2.ID)
		time.Sleep(time.Until(from.Add(2 * time.Minute)))
		s := spec("a", 0, hotType("vm-mi300x-1"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		_, err = e.m.Release(t.Context(), job2.ID)
		require.NoError(t, err)
		assert.ErrorIs(t, e.m.GiveBack(job1), fleet.ErrHandedOutAgain, "job 1's give-back, late (release recorded)")
		time.Sleep(time.Minute)
		rec := recordOf(e.m, job2.ID)
		require.NotNil(t, rec.Termination)
		require.Equal(t, fleet.StatusTerminating, rec.Instance.Status)
		assert.True(t, rec.Termination.Busy, "released under job 2")
		assert.Equal(t, job2.HandOut, rec.Termination.HandOut, "the hand-out its release was decided under")

		assert.ErrorIs(t, e.m.GiveBack(job1), fleet.ErrHandedOutAgain, "job 1's give-back, late (release carried out)")
		assert.Error(t, e.m.MarkBusy(job2.ID), "MarkBusy of a node in release")
		time.Sleep(time.Minute)
		rec = recordOf(e.m, job2.ID)
		assert.True(t, rec.Termination.Busy, "a refused give-back or mark changed the release")
		assert.Equal(t, job2.HandOut, rec.Termination.HandOut)

		require.NoError(t, e.m.GiveBack(job2), "job 2's own give-back")
		time.Sleep(time.Minute)
		rec = recordOf(e.m, job2.ID)
		require.NotNil(t, rec.Termination, "the release stands")
		assert.Equal(t, fleet.StatusTerminating, rec.Instance.Status, "the release stands")
		assert.False(t, rec.Termination.Busy, "job 2 ended")
		assert.Empty(t, rec.Termination.HandOut, "job 2's hand-out ended")
		assert.NoError(t, e.m.GiveBack(job2), "repeated: nothing to do")
		assert.NoError(t, e.m.GiveBack(job1), "job 1's, once no job holds the node: nothing to do")
		assert.Error(t, e.m.MarkBusy(job2.ID), "MarkBusy of a node in release")
		_, err = e.m.Acquire(t.Context(), "a")
		assert.Error(t, err, "a node in release handed out")

		time.Sleep(time.Until(from.Add(time.Hour)))
		c := serverCharge(e, job2.ID)
		assert.False(t, c.Live, "X kept past its minimum's end (%s)", c.Description)
		assert.LessOrEqual(t, c.Billed, 30*time.Minute)
		assert.ErrorIs(t, e.m.GiveBack(job2), fleet.ErrNotFound, "a give-back once X is gone")
		assert.Error(t, e.m.MarkIdle(job2.ID), "MarkIdle once X is gone")
		assert.Empty(t, activeOf(e.m.Instances("a")), "X back after a give-back")
	})
}

// A give-back of a node whose release is under way at the cloud (here
// ReleaseNow: forced at once, inside its minimum) changes nothing and
// answers ErrReleaseUnderWay (or, once the node is gone, ErrNotFound);
// MarkIdle too. The node is not taken back.
func TestGiveBackOfANodeWhoseReleaseIsUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		defer stop()
		x, err := e.m.Acquire(t.Context(), "a")
		require.NoError(t, err)
		time.Sleep(2 * time.Minute)
		s := spec("a", 0, hotType("vm-mi300x-1"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		_, err = e.m.Release(t.Context(), x.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
		require.NoError(t, err)
		for deadline := time.Now().Add(10 * time.Minute); recordOf(e.m, x.ID).Instance.Status != fleet.StatusTerminating; time.Sleep(time.Second) {
			require.True(t, time.Now().Before(deadline), "the release not carried out")
		}
		for _, err := range []error{e.m.GiveBack(x), e.m.MarkIdle(x.ID)} {
			require.Error(t, err)
			t.Logf("under way: %v", err)
			assert.True(t, errors.Is(err, fleet.ErrReleaseUnderWay) || errors.Is(err, fleet.ErrNotFound), "%v", err)
		}
		time.Sleep(time.Hour)
		assert.False(t, serverCharge(e, x.ID).Live, "X not released")
		assert.Empty(t, activeOf(e.m.Instances("a")), "X back after a give-back")
		assert.ErrorIs(t, e.m.GiveBack(x), fleet.ErrNotFound)
	})
}
