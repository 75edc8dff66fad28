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

// As TestReleasedUnderAJobGivesWayOnceGivenBack, with two replicas (both
// fleets held by r0; a Hot Aisle team limited to one VM): fleet A's node X
// runs a job; at 2:00 A is applied with no node and X is released (by its
// fleet's ReleaseAtReservationEnd: the release waits for the minimum's
// end), through the replica that does not hold A; at 3:00 fleet B applies
// one VM and is refused for the limit. At 12:00 the job's GiveBack,
// through the holder or the other replica, answers nil; the holder carries
// it out (Termination.Busy ends, X stays released) and X gives way to B:
// B is served at about the job's end, not at X's minimum's end. Job's
// give-back repeated: nil (ErrReleaseUnderWay once X is forced for B); a
// stale hand-out's: refused while the job ran; MarkBusy refused.
//
// (before the fix: the give-back answered "terminating, not ready" through
// either replica and X waited for its minimum's end.)
func TestReplicasReleasedUnderAJobGivesWayOnceGivenBack(t *testing.T) {
	for _, through := range []string{"holder", "other replica"} {
		t.Run(through, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{}, sim.WithHotAisleLimits(1, 10))
				store := fleet.NewMemoryLeaseStore(nil)
				rs := newReplicaSet(t, e, store, 2)
				a, b := fleetForHolder("ga", "r0"), fleetForHolder("gb", "r0")
				sa := spec(a, 1, hotType("vm-mi300x-1"))
				sa.IdleTimeout, sa.ReleasePolicy = 5*time.Minute, fleet.ReleaseAtReservationEnd
				require.NoError(t, rs.ms[0].Apply(t.Context(), sa))
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{a: 1}); time.Sleep(10 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged")
				}
				require.Equal(t, 0, rs.holderOf(t, a))
				stale, err := rs.ms[0].Acquire(t.Context(), a)
				require.NoError(t, err)
				require.NoError(t, rs.ms[0].GiveBack(stale))
				x, err := rs.ms[0].Acquire(t.Context(), a)
				require.NoError(t, err)
				require.Equal(t, stale.ID, x.ID)
				from := serverCharge(e, x.ID).From
				time.Sleep(time.Until(from.Add(2 * time.Minute)))
				sa.Nodes = 0
				require.NoError(t, rs.ms[1].Apply(t.Context(), sa))
				at, err := rs.ms[1].Release(t.Context(), x.ID)
				require.NoError(t, err)
				require.True(t, at.After(time.Now().Add(20*time.Minute)), "the release waits for the minimum's end: %v", at)
				time.Sleep(time.Until(from.Add(3 * time.Minute)))
				sb := spec(b, 1, hotType("vm-mi300x-1"))
				sb.IdleTimeout = 5 * time.Minute
				require.NoError(t, rs.ms[1].Apply(t.Context(), sb))
				asked := time.Now()
				for deadline := asked.Add(10 * time.Minute); len(e.eventsOf(fleet.EventCreatesRefused)) == 0; time.Sleep(time.Second) {
					require.True(t, time.Now().Before(deadline), "b's create was not refused for the limit")
				}
				giver := rs.ms[0]
				if through == "other replica" {
					giver = rs.ms[1]
				}
				time.Sleep(time.Until(from.Add(12 * time.Minute)))
				rec := storedRecord(t, store, x.RequestID)
				require.NotNil(t, rec.Termination, "X released")
				assert.True(t, rec.Termination.Busy, "released under its job")
				assert.Equal(t, x.HandOut, rec.Termination.HandOut, "the hand-out stored with its release")
				assert.Empty(t, yieldedTo(e, b, asked), "X gave way under its job")
				assert.ErrorIs(t, giver.GiveBack(stale), fleet.ErrHandedOutAgain, "a stale hand-out's give-back")
				assert.Error(t, giver.MarkBusy(x.ID), "MarkBusy of a node in release")
				assert.NoError(t, giver.GiveBack(x), "the job's give-back of a node whose release waits")
				if err := giver.GiveBack(x); err != nil { // repeated: nothing to do
					// unless the holder carried the first out and forced the release for b meanwhile
					assert.ErrorIs(t, err, fleet.ErrReleaseUnderWay, "repeated")
				}
				var wait time.Duration
				for {
					y, err := rs.ms[0].Acquire(t.Context(), b)
					if err == nil {
						require.NoError(t, rs.ms[0].MarkIdle(y.ID))
						wait = time.Since(asked)
						break
					}
					require.True(t, errors.Is(err, fleet.ErrNoIdle), "%v", err)
					require.True(t, time.Now().Before(asked.Add(2*time.Hour)), "b never served")
					time.Sleep(10 * time.Second)
				}
				logYieldEvents(t, e, from)
				t.Logf("%s: b served after %v (+%v)", through, wait.Round(time.Second), time.Since(from).Round(time.Second))
				assert.LessOrEqual(t, wait, 13*time.Minute, "%s: b waited %v for the stock of X, whose job ended at 12:00", through, wait)
				assert.Len(t, yieldedTo(e, b, asked), 1, "%s: X gives way to b once its job is given back", through)
				c := serverCharge(e, x.ID)
				assert.False(t, c.Live, "X still billed")
				assert.LessOrEqual(t, c.Billed, 30*time.Minute, "X billed past its minimum")
				time.Sleep(5 * time.Minute)
				assert.ErrorIs(t, giver.GiveBack(x), fleet.ErrNotFound, "a give-back once X is gone")
				require.NoError(t, rs.ms[1].Delete(t.Context(), a))
				require.NoError(t, rs.ms[1].Delete(t.Context(), b))
				time.Sleep(2 * time.Hour)
				rs.stopAll()
				e.assertNothingLeft()
			})
		})
	}
}

// storedRecord is the shared store's record of request id.
func storedRecord(t *testing.T, store fleet.Store, id string) fleet.InstanceRecord {
	t.Helper()
	recs, err := store.Instances(t.Context())
	require.NoError(t, err)
	for _, r := range recs {
		if r.Instance.RequestID == id {
			return r
		}
	}
	t.Fatalf("no stored record of %s", id)
	return fleet.InstanceRecord{}
}
