package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acquire on the replica that does not hold the fleet answers ErrNoIdle
// wrapping a *fleet.LeaseHeldError that names the holder (Acquire's doc).
func TestAcquireOnNonHolderNamesTheHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[1].Apply(t.Context(), spec("aq", 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"aq": 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		h := rs.holderOf(t, "aq")
		require.GreaterOrEqual(t, h, 0)
		_, err := rs.ms[1-h].Acquire(t.Context(), "aq")
		require.ErrorIs(t, err, fleet.ErrNoIdle)
		var held *fleet.LeaseHeldError
		require.ErrorAs(t, err, &held)
		assert.Equal(t, replicaName(h), held.Holder)
		assert.Equal(t, fleet.FleetLease("aq"), held.Name)
		in, err := rs.ms[h].Acquire(t.Context(), "aq")
		require.NoError(t, err)
		assert.Equal(t, fleet.StatusBusy, in.Status)
		_, err = rs.ms[h].Acquire(t.Context(), "aq")
		require.ErrorIs(t, err, fleet.ErrNoIdle, "one node, handed out once")
		require.NoError(t, rs.ms[h].Delete(t.Context(), "aq"))
		time.Sleep(3 * time.Hour)
		rs.stopAll()
		e.assertNothingLeft()
	})
}

// The holder hands a node out with Acquire and its process dies right
// after answering (before its loop carried the busy mark out). The replica
// that takes the fleet over does not hand the same node to a second job:
// the mark was stored before Acquire answered.
func TestAcquireSurvivesTheHoldersDeath(t *testing.T) {
	twice := 0
	for round := range 4 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := fleet.NewMemoryLeaseStore(nil)
				rs := newReplicaSet(t, e, store, 2)
				require.NoError(t, rs.ms[0].Apply(t.Context(), spec("ad", 1, vultrVM("ewr"))))
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"ad": 1}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged")
				}
				h := rs.holderOf(t, "ad")
				require.GreaterOrEqual(t, h, 0)
				first, err := rs.ms[h].Acquire(t.Context(), "ad")
				require.NoError(t, err)
				rs.stop(h) // dies right after answering
				var second fleet.Instance
				for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Second) {
					in, err := rs.ms[1-h].Acquire(t.Context(), "ad")
					if err == nil {
						second = in
						break
					}
					require.True(t, errors.Is(err, fleet.ErrNoIdle), "%v", err)
				}
				if second.ID == first.ID {
					twice++
				}
				assert.NotEqual(t, first.ID, second.ID, "round %d: node %s handed out by Acquire twice (before and after the takeover)", round, first.ID)
				require.NoError(t, rs.ms[1-h].Delete(t.Context(), "ad"))
				time.Sleep(3 * time.Hour)
				rs.stop(1 - h)
				e.assertNothingLeft()
			})
		})
	}
	assert.Zero(t, twice, "handed out twice")
}

// intentFaults is a LeaseStore whose PutIntent fails while fail is set.
type intentFaults struct {
	fleet.LeaseStore
	fail atomic.Bool
}

func (s *intentFaults) PutIntent(ctx context.Context, in fleet.Intent) (int64, error) {
	if s.fail.Load() {
		return 0, errors.New("store down")
	}
	return s.LeaseStore.PutIntent(ctx, in)
}

// convergedHolder applies a fleet of n Vultr VMs through replica 0 and
// waits until it runs; it returns the index of the replica holding it.
func convergedHolder(t *testing.T, rs *replicaSet, name string, n int) int {
	t.Helper()
	require.NoError(t, rs.ms[0].Apply(t.Context(), spec(name, n, vultrVM("ewr"))))
	for deadline := time.Now().Add(time.Hour); !converged(t, rs.store, map[string]int{name: n}); time.Sleep(30 * time.Second) {
		require.True(t, time.Now().Before(deadline), "not converged")
	}
	h := rs.holderOf(t, name)
	require.GreaterOrEqual(t, h, 0, "someone holds the fleet")
	return h
}

// When the holder cannot record the busy mark, Acquire fails with
// ErrNotRecorded (wrapping the store's error) and the node is not taken:
// the next Acquire, with the store back, hands it out.
func TestAcquireFailsWhenTheBusyMarkIsNotRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &intentFaults{LeaseStore: fleet.NewMemoryLeaseStore(nil)}
		rs := newReplicaSet(t, e, store, 2)
		h := convergedHolder(t, rs, "nr", 1)
		store.fail.Store(true)
		_, err := rs.ms[h].Acquire(t.Context(), "nr")
		require.ErrorIs(t, err, fleet.ErrNotRecorded)
		assert.ErrorContains(t, err, "store down")
		require.ErrorIs(t, rs.ms[h].Apply(t.Context(), spec("nr", 2, vultrVM("ewr"))), fleet.ErrNotRecorded, "Apply alike")
		time.Sleep(time.Minute)
		assert.Len(t, storedIdle(t, store, "nr"), 1, "not marked busy")
		store.fail.Store(false)
		in, err := rs.ms[h].Acquire(t.Context(), "nr")
		require.NoError(t, err, "the node was not taken by the failed Acquire")
		assert.Equal(t, fleet.StatusBusy, in.Status)
		require.NoError(t, rs.ms[h].Delete(t.Context(), "nr"))
		time.Sleep(3 * time.Hour)
		rs.stopAll()
		e.assertNothingLeft()
	})
}

// Acquire on the holder never hands out a node that a call through the
// other replica released or marked busy just before (recorded, not yet
// read by the holder), and answers ErrNotFound once the fleet's Delete is
// recorded there.
func TestAcquireOnHolderCountsIntentsRecordedElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other func(t *testing.T, m *fleet.Manager, x fleet.Instance)
	}{
		{"release", func(t *testing.T, m *fleet.Manager, x fleet.Instance) {
			_, err := m.Release(t.Context(), x.ID)
			require.NoError(t, err)
		}},
		{"mark busy", func(t *testing.T, m *fleet.Manager, x fleet.Instance) { require.NoError(t, m.MarkBusy(x.ID)) }},
		{"delete", func(t *testing.T, m *fleet.Manager, _ fleet.Instance) {
			require.NoError(t, m.Delete(t.Context(), "ac"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := fleet.NewMemoryLeaseStore(nil)
				rs := newReplicaSet(t, e, store, 2)
				h := convergedHolder(t, rs, "ac", 2)
				for _, x := range storedIdle(t, store, "ac") { // whichever the holder would pick
					tc.other(t, rs.ms[1-h], x.Instance)
					if tc.name == "delete" {
						_, err := rs.ms[h].Acquire(t.Context(), "ac")
						require.ErrorIs(t, err, fleet.ErrNotFound)
						break
					}
				}
				if tc.name != "delete" {
					_, err := rs.ms[h].Acquire(t.Context(), "ac")
					require.ErrorIs(t, err, fleet.ErrNoIdle, "both nodes were taken through the other replica")
					require.NoError(t, rs.ms[h].Delete(t.Context(), "ac"))
				}
				time.Sleep(3 * time.Hour)
				rs.stopAll()
				e.assertNothingLeft()
			})
		})
	}
}

// Both nodes of a fleet handed out by the holder, which then dies: the
// replica taking over hands out neither.
func TestAcquireTwiceThenHolderDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 2)
		h := convergedHolder(t, rs, "a2", 2)
		a, err := rs.ms[h].Acquire(t.Context(), "a2")
		require.NoError(t, err)
		b, err := rs.ms[h].Acquire(t.Context(), "a2")
		require.NoError(t, err)
		assert.NotEqual(t, a.ID, b.ID)
		rs.stop(h)
		for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Second) {
			in, err := rs.ms[1-h].Acquire(t.Context(), "a2")
			require.ErrorIs(t, err, fleet.ErrNoIdle, "handed out again: %s", in.ID)
		}
		require.NoError(t, rs.ms[1-h].MarkIdle(a.ID))
		time.Sleep(time.Minute)
		in, err := rs.ms[1-h].Acquire(t.Context(), "a2")
		require.NoError(t, err, "given back with MarkIdle")
		assert.Equal(t, a.ID, in.ID)
		require.NoError(t, rs.ms[1-h].Delete(t.Context(), "a2"))
		time.Sleep(3 * time.Hour)
		rs.stop(1 - h)
		e.assertNothingLeft()
	})
}
