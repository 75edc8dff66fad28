package fleet_test

import (
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
// X is released (how: "release", Release(X); "delete", Delete("a")) under
// the job — its release waits for the minimum's end (paid anyway) and,
// a job running on it, does not give way — and fleet "a" is applied with
// no node ("release": it wants no replacement); at 3:00 fleet "b" applies
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
	} else {
		at, err := e.m.Release(t.Context(), x.ID)
		require.NoError(t, err)
		require.True(t, at.After(time.Now().Add(20*time.Minute)), "the release waits for the minimum's end: %v", at)
		s := spec("a", 0, hotType("vm-mi300x-1"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
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
// waited for its minimum's end: b was served after 24 to 26 min.)
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
