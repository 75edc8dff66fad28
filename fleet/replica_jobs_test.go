package fleet_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// halfWriteStore is one replica's view of the shared MemoryLeaseStore:
// once armed, its PutFleet (or PutInstance) calls fail, as if the process
// died between the two writes of one flush.
type halfWriteStore struct {
	*fleet.MemoryLeaseStore
	failFleet, failInstance atomic.Bool
}

func (s *halfWriteStore) PutFleet(ctx context.Context, f fleet.FleetRecord) error {
	if s.failFleet.Load() {
		return errors.New("connection reset")
	}
	return s.MemoryLeaseStore.PutFleet(ctx, f)
}

func (s *halfWriteStore) PutInstance(ctx context.Context, r fleet.InstanceRecord) error {
	if s.failInstance.Load() {
		return errors.New("connection reset")
	}
	return s.MemoryLeaseStore.PutInstance(ctx, r)
}

// storedJobs is fleet's FleetRecord.Jobs as the shared store has it.
func storedJobs(t *testing.T, store fleet.Store, name string) []fleet.BusyPeriod {
	t.Helper()
	fs, err := store.Fleets(t.Context())
	require.NoError(t, err)
	for _, f := range fs {
		if f.Spec.Name == name {
			return f.Jobs
		}
	}
	t.Fatalf("fleet %s not stored", name)
	return nil
}

// A fleet's job history survives a flush written by halves (tester AD):
// two replicas on one shared store, one 40-minute job on a Hot Aisle VM
// placed with Acquire, then MarkIdle. The holder's flush writes the
// FleetRecord (with the job) and the InstanceRecord (idle) separately:
//   - "instance write lost": the next holder carries the MarkIdle out again
//     on a record still busy; the job, already stored, is not added twice
//     (BusyPeriod.Node and Start identify it);
//   - "fleet write lost": the record says idle, the job is not in the fleet
//     record; the next holder adds it from BusySince and IdleSince;
//   - "fleet write stale" (nobody dies): the holder drops the fleet and
//     takes it again, and adds the job the same way.
//
// One job stored in each case (it was stored twice, or not at all).
func TestJobHistoryAcrossATakeoverMidFlush(t *testing.T) {
	for _, lost := range []string{"instance write lost", "fleet write lost", "fleet write stale"} {
		t.Run(lost, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				shared := fleet.NewMemoryLeaseStore(nil)
				var views []*halfWriteStore
				rs := &replicaSet{e: e, store: shared}
				for range 2 {
					v := &halfWriteStore{MemoryLeaseStore: shared}
					views = append(views, v)
					rs.add(t, "jh", v, e.vp, e.hp)
				}
				time.Sleep(time.Minute)
				s := spec("jh", 1, hotType("vm-mi300x-1"))
				s.IdleTimeout = 10 * time.Minute
				require.NoError(t, rs.ms[0].Apply(t.Context(), s))
				for deadline := time.Now().Add(time.Hour); !converged(t, shared, map[string]int{"jh": 1}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged")
				}
				h := rs.holderOf(t, "jh")
				require.GreaterOrEqual(t, h, 0)
				in, err := rs.ms[h].Acquire(t.Context(), "jh")
				require.NoError(t, err)
				time.Sleep(40 * time.Minute)
				require.Empty(t, storedJobs(t, shared, "jh"), "no job ended yet")
				switch lost {
				case "instance write lost":
					views[h].failInstance.Store(true)
				case "fleet write lost":
					views[h].failFleet.Store(true)
				case "fleet write stale":
					// A late write of the fleet's record, unchanged (a previous
					// holder's write landing late): the holder's next PutFleet
					// answers ErrStaleWrite.
					fs, err := shared.Fleets(t.Context())
					require.NoError(t, err)
					require.Len(t, fs, 1)
					require.NoError(t, shared.PutFleet(t.Context(), fs[0]))
				}
				require.NoError(t, rs.ms[h].MarkIdle(in.ID))
				time.Sleep(5 * time.Second) // carried out and (half) flushed
				if lost == "fleet write stale" {
					time.Sleep(2 * time.Minute) // the holder drops the fleet and takes it again; nobody dies
				} else {
					rs.stop(h)                  // dies before it writes again
					time.Sleep(2 * time.Minute) // the other replica takes the fleet over
					require.Equal(t, 1-h, rs.holderOf(t, "jh"), "taken over")
					h = 1 - h
				}
				jobs := storedJobs(t, shared, "jh")
				assert.Len(t, jobs, 1, "one 40-minute job ran on the fleet; stored jobs: %v", jobs)
				require.NoError(t, rs.ms[h].Delete(t.Context(), "jh"))
				time.Sleep(3 * time.Hour)
				for i := range rs.ms {
					if lost == "fleet write stale" || i == h {
						rs.stop(i)
					}
				}
				e.assertNothingLeft()
			})
		})
	}
}
