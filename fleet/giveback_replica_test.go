package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// replicasWithNode starts two replicas on a MemoryLeaseStore with fleet
// "gb" of one idle Vultr VM (IdleTimeout 5 min, ReleaseNow), and returns
// them with the index of the fleet's holder.
func replicasWithNode(t *testing.T) (*env, fleet.LeaseStore, *replicaSet, int) {
	e := newEnv(t, fleet.Policy{})
	store := fleet.NewMemoryLeaseStore(nil)
	rs := newReplicaSet(t, e, store, 2)
	s := spec("gb", 1, vultrVM("ewr"))
	s.IdleTimeout = 5 * time.Minute
	require.NoError(t, rs.ms[0].Apply(t.Context(), s))
	for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"gb": 1}); time.Sleep(30 * time.Second) {
		require.True(t, time.Now().Before(deadline), "not converged")
	}
	h := rs.holderOf(t, "gb")
	require.GreaterOrEqual(t, h, 0)
	return e, store, rs, h
}

// storedNode is fleet gb's one live node as the shared store has it.
func storedNode(t *testing.T, store fleet.Store) fleet.InstanceRecord {
	t.Helper()
	recs, err := store.Instances(t.Context())
	require.NoError(t, err)
	var live []fleet.InstanceRecord
	for _, r := range recs {
		if r.Instance.Fleet == "gb" && r.Instance.Status.Active() {
			live = append(live, r)
		}
	}
	require.Len(t, live, 1, "fleet gb's one node (none: released under its job)")
	return live[0]
}

// With replicas, through the holder or the other replica: job 1's
// give-back, repeated after the holder handed the node out again to job 2
// (its busy mark carried out or still pending in the store), is refused
// with ErrHandedOutAgain; the node stays busy with job 2, is not handed out
// again, and is not released for idleness (IdleTimeout 5 min, ReleaseNow).
// Job 2's GiveBack frees it.
func TestReplicasGiveBackOfAnEndedHandOutIsRefused(t *testing.T) {
	for _, c := range giveBackRoutes {
		t.Run(c.through+", job 2's mark "+c.mark, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, store, rs, h := replicasWithNode(t)
				giver := c.replica(rs, h)
				job1, err := rs.ms[h].Acquire(t.Context(), "gb")
				require.NoError(t, err)
				require.NotEmpty(t, job1.HandOut)
				time.Sleep(2 * time.Minute)
				require.NoError(t, giver.GiveBack(job1))
				time.Sleep(2 * time.Minute)
				require.NoError(t, giver.GiveBack(job1), "repeated while the node is idle: nothing to do")
				job2, err := rs.ms[h].Acquire(t.Context(), "gb")
				require.NoError(t, err)
				require.Equal(t, job1.ID, job2.ID)
				if c.mark == "carried out" {
					time.Sleep(2 * time.Minute)
					require.Equal(t, job2.HandOut, storedNode(t, store).HandOut, "the hand-out is stored with the record")
				}
				assert.ErrorIs(t, giver.GiveBack(job1), fleet.ErrHandedOutAgain, "job 1's give-back, late")
				time.Sleep(30 * time.Minute)
				rec := storedNode(t, store)
				assert.Nil(t, rec.Termination, "released under job 2")
				assert.Equal(t, fleet.StatusBusy, rec.Instance.Status, "job 2 runs on it")
				got, err := rs.ms[h].Acquire(t.Context(), "gb")
				assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out a third time: %s", got.ID)

				require.NoError(t, giver.GiveBack(job2), "job 2's own give-back")
				job3, err := rs.ms[h].Acquire(t.Context(), "gb")
				require.NoError(t, err, "given back by job 2")
				assert.Equal(t, job1.ID, job3.ID)
				require.NoError(t, giver.GiveBack(job3))
				require.NoError(t, rs.ms[0].Delete(t.Context(), "gb"))
				time.Sleep(2 * time.Hour)
				rs.stopAll()
				e.assertNothingLeft()
			})
		})
	}
}

// The holder checks the hand-out when it carries a give-back out: an idle
// mark of job 1's hand-out stored after job 2's busy mark (a GiveBack whose
// checks ran before job 2's Acquire wrote its mark) is dropped, by the
// holder and, after its death, by the replica that takes the fleet over
// (the hand-out is on the stored record). Job 2's give-back, through the
// new holder, frees the node.
func TestReplicasHolderDropsAGiveBackOfAnEndedHandOut(t *testing.T) {
	for _, who := range []string{"holder", "next holder"} {
		t.Run(who, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, store, rs, h := replicasWithNode(t)
				job1, err := rs.ms[h].Acquire(t.Context(), "gb")
				require.NoError(t, err)
				time.Sleep(2 * time.Minute)
				require.NoError(t, rs.ms[h].GiveBack(job1))
				job2, err := rs.ms[h].Acquire(t.Context(), "gb")
				require.NoError(t, err)
				require.Equal(t, job1.ID, job2.ID)
				time.Sleep(2 * time.Minute)
				other := 1 - h
				if who == "next holder" {
					rs.stop(h) // dies: its lease runs out, the other replica takes the fleet over
					for deadline := time.Now().Add(10 * time.Minute); rs.holderOf(t, "gb") != other; time.Sleep(10 * time.Second) {
						require.True(t, time.Now().Before(deadline), "not taken over")
					}
				}
				_, err = store.PutIntent(t.Context(), fleet.Intent{Fleet: "gb", Kind: fleet.IntentIdle,
					InstanceID: job1.RequestID, Acquire: job1.HandOut, At: time.Now()})
				require.NoError(t, err)
				time.Sleep(30 * time.Minute)
				rec := storedNode(t, store)
				assert.Nil(t, rec.Termination, "released under job 2")
				assert.Equal(t, fleet.StatusBusy, rec.Instance.Status, "job 2 runs on it")
				assert.Equal(t, job2.HandOut, rec.HandOut)
				holder := rs.ms[h]
				if who == "next holder" {
					holder = rs.ms[other]
				}
				got, err := holder.Acquire(t.Context(), "gb")
				assert.ErrorIs(t, err, fleet.ErrNoIdle, "handed out a third time: %s", got.ID)
				assert.ErrorIs(t, rs.ms[other].GiveBack(job1), fleet.ErrHandedOutAgain)

				require.NoError(t, rs.ms[other].GiveBack(job2))
				job3, err := holder.Acquire(t.Context(), "gb")
				require.NoError(t, err, "given back by job 2")
				assert.Equal(t, job1.ID, job3.ID)
				require.NoError(t, rs.ms[other].Delete(t.Context(), "gb"))
				time.Sleep(2 * time.Hour)
				if who == "next holder" {
					rs.stop(other)
				} else {
					rs.stopAll()
				}
				e.assertNothingLeft()
			})
		})
	}
}

// giveBackRoute is one way a give-back case records its marks: through
// the replica holding the fleet or the other one, the mark in question
// carried out by the holder or still pending in the store.
type giveBackRoute struct{ through, mark string }

// giveBackRoutes are the four routes the replica give-back cases run.
var giveBackRoutes = []giveBackRoute{
	{"holder", "carried out"}, {"other replica", "carried out"}, {"holder", "pending"}, {"other replica", "pending"},
}

// replica is the Manager the route records through, h holding the fleet.
func (c giveBackRoute) replica(rs *replicaSet, h int) *fleet.Manager {
	if c.through == "holder" {
		return rs.ms[h]
	}
	return rs.ms[1-h]
}
