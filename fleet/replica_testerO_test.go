package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// holderOf returns the index of the replica holding fleet's lease, by
// the store's leases (-1: none).
func holderOfO(t *testing.T, store fleet.LeaseStore, fleetName string, ids []string) int {
	t.Helper()
	ls, err := store.Leases(t.Context())
	require.NoError(t, err)
	for _, l := range ls {
		if l.Name == fleet.FleetLease(fleetName) {
			for i, id := range ids {
				if l.Holder == id {
					return i
				}
			}
		}
	}
	return -1
}

// Acquire on the holder: its busy-mark write commits but the answer is
// lost, and the read that would find it fails too. Acquire answers
// ErrNotRecorded and, per its docs, "the node stays idle". The holder then
// dies (its voided token dies with it) and the other replica takes the
// fleet over: it carries out the stored busy mark, and the node is busy
// for ever with no job (no MarkIdle will ever come for it; Acquire
// answers ErrNoIdle on a fleet whose only node is unused).
func TestTesterOVoidedAcquireMarkCarriedOutByTheNextHolder(t *testing.T) {
	for _, how := range []string{"crash", "close"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := &lostAnswerStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil)}
				rs := newReplicaSet(t, e, store, 2)
				require.NoError(t, rs.ms[0].Apply(t.Context(), spec("vo", 1, vultrVM("ewr"))))
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"vo": 1}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged")
				}
				h := holderOfO(t, store, "vo", []string{"r0", "r1"})
				require.GreaterOrEqual(t, h, 0)
				store.mu.Lock()
				store.armed, store.failRead = true, true
				store.mu.Unlock()
				_, err := rs.ms[h].Acquire(t.Context(), "vo")
				require.ErrorIs(t, err, fleet.ErrNotRecorded, "the answer was lost and the read failed")
				if how == "crash" {
					rs.stop(h)
				} else {
					rs.stop(h)
					rs.ms[h].Close()
				}
				other := rs.ms[1-h]
				time.Sleep(3 * time.Minute) // the lease runs out, the other takes the fleet
				require.Equal(t, 1-h, holderOfO(t, store, "vo", []string{"r0", "r1"}), "taken over")
				got := other.Instances("vo")
				require.Len(t, got, 1)
				assert.Equal(t, fleet.StatusIdle, got[0].Status, "Acquire failed: nobody runs a job on the node, it must stay idle")
				_, err = other.Acquire(t.Context(), "vo")
				assert.NoError(t, err, "the fleet's only node is unused: Acquire hands it out")
				rs.stop(1 - h)
			})
		})
	}
}

// rendezvousO is the replicas' pick of a fleet's holder (copied from the
// package: FNV-1a of name and holder, MurmurHash3's finalizer, highest).
func rendezvousO(key string, holders []string) string {
	best, bestH := "", uint64(0)
	for _, h := range holders {
		f := fnv.New64a()
		f.Write([]byte(key + "\x00" + h))
		x := f.Sum64()
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
		x *= 0xc4ceb9fe1a85ec53
		x ^= x >> 33
		if best == "" || x > bestH {
			best, bestH = h, x
		}
	}
	return best
}

// movingFleetO names a fleet that r0 holds alone and that falls to r1 once
// r1 is live.
func movingFleetO(prefix string) string { return fleetForO(prefix, "r1") }

// fleetForO names a fleet that falls to holder among r0 and r1.
func fleetForO(prefix, holder string) string {
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		if rendezvousO(name, []string{"r0", "r1"}) == holder {
			return name
		}
	}
}

// The same without any crash: one replica runs, a second one joins (scale
// out), and the fleet is handed over to it by the hashing. The holder had
// voided the busy mark of a failed Acquire; the new holder carries it out.
func TestTesterOVoidedAcquireMarkCarriedOutAfterAHandover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &lostAnswerStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil)}
		r0 := startReplica(t, e, store, "r0")
		name := movingFleetO("ho")
		require.NoError(t, r0.m.Apply(t.Context(), spec(name, 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{name: 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		require.Equal(t, 0, holderOfO(t, store, name, []string{"r0", "r1"}))
		store.mu.Lock()
		store.armed, store.failRead = true, true
		store.mu.Unlock()
		_, err := r0.m.Acquire(t.Context(), name)
		require.ErrorIs(t, err, fleet.ErrNotRecorded, "the answer was lost and the read failed")
		r1 := startReplica(t, e, store, "r1")
		time.Sleep(3 * time.Minute)
		require.Equal(t, 1, holderOfO(t, store, name, []string{"r0", "r1"}), "handed over to r1")
		got := r1.m.Instances(name)
		require.Len(t, got, 1)
		assert.Equal(t, fleet.StatusIdle, got[0].Status, "Acquire failed: nobody runs a job on the node, it must stay idle")
		_, err = r1.m.Acquire(t.Context(), name)
		assert.NoError(t, err, "the fleet's only node is unused: Acquire hands it out")
		require.NoError(t, r0.stop())
		require.NoError(t, r1.stop())
	})
}

// ackFailStore fails AckIntents of a fleet while armed (the database was
// unreachable for that one call: nothing was acknowledged).
type ackFailStore struct {
	*fleet.MemoryLeaseStore
	mu    sync.Mutex
	fail  map[string]int // fleet → acks left to fail
	fails int
}

func (s *ackFailStore) AckIntents(ctx context.Context, f string, through int64) error {
	s.mu.Lock()
	if s.fail[f] > 0 {
		s.fail[f]--
		s.fails++
		s.mu.Unlock()
		return errors.New("ack: connection reset")
	}
	s.mu.Unlock()
	return s.MemoryLeaseStore.AckIntents(ctx, f, through)
}

func (s *ackFailStore) arm(f string, n int) {
	s.mu.Lock()
	s.fail[f] += n
	s.mu.Unlock()
}

// One AckIntents fails (an outage of one call) after a Delete was carried
// out. The holder counts the intents as acknowledged all the same and
// never acknowledges them again: the Delete intent stays stored for ever,
// and the fleet's name can never be applied again ("being deleted").
// (With the failure not armed, the same steps pass.)
func TestTesterOFailedAckOfADeleteIsNeverRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &ackFailStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil), fail: map[string]int{}}
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("ad", 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"ad": 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		time.Sleep(time.Minute)
		ins, err := store.Intents(t.Context(), "ad")
		require.NoError(t, err)
		require.Empty(t, ins, "the Apply is acknowledged")
		store.arm("ad", 1)
		require.NoError(t, rs.ms[0].Delete(t.Context(), "ad"))
		for deadline := time.Now().Add(3 * time.Hour); ; time.Sleep(time.Minute) {
			fleets, err := store.Fleets(t.Context())
			require.NoError(t, err)
			if len(fleets) == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "not deleted")
		}
		time.Sleep(10 * time.Minute)
		store.mu.Lock()
		fails := store.fails
		store.mu.Unlock()
		require.Equal(t, 1, fails, "one acknowledgement failed")
		ins, err = store.Intents(t.Context(), "ad")
		require.NoError(t, err)
		assert.Empty(t, ins, "the Delete was carried out: its intent is acknowledged (the failed ack retried)")
		err = rs.ms[1].Apply(t.Context(), spec("ad", 1, vultrVM("ewr")))
		assert.NoError(t, err, "the fleet is deleted: its name can be applied again")
		rs.stopAll()
	})
}

// lostPutStore commits the next PutIntent of a kind and answers an error
// (a timeout after the commit: the answer was lost).
type lostPutStore struct {
	*fleet.MemoryLeaseStore
	mu   sync.Mutex
	kind fleet.IntentKind
}

func (s *lostPutStore) PutIntent(ctx context.Context, in fleet.Intent) (int64, error) {
	seq, err := s.MemoryLeaseStore.PutIntent(ctx, in)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && in.Kind == s.kind {
		s.kind = ""
		return 0, errors.New("timeout after commit")
	}
	return seq, err
}

// ErrNotRecorded's docs: "nothing of the call will be carried out. Call
// again." An Apply whose intent write committed but whose answer was lost
// answers ErrNotRecorded, and the fleet is created all the same: servers
// are bought and bill though the caller was told nothing would happen
// (a caller that gives up on the fleet is never told to delete it).
func TestTesterOApplyAnsweredNotRecordedIsCarriedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &lostPutStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil), kind: fleet.IntentApply}
		rs := newReplicaSet(t, e, store, 2)
		err := rs.ms[0].Apply(t.Context(), spec("lp", 2, vultrVM("ewr")))
		require.ErrorIs(t, err, fleet.ErrNotRecorded)
		time.Sleep(30 * time.Minute)
		assert.Empty(t, rs.ms[1].Fleets(), "Apply answered ErrNotRecorded: no fleet")
		assert.Zero(t, e.liveServers(), "Apply answered ErrNotRecorded: nothing bought")
		rs.stopAll()
	})
}

// stallStore is one replica's connection to a shared LeaseStore: while
// stalled, its intent writes and lease calls wait (a database connection
// that stops answering for a while: a network stall, a long lock wait),
// then go through; the other replicas' connections are unaffected.
type stallStore struct {
	*fleet.MemoryLeaseStore
	mu    sync.Mutex
	until time.Time
}

func (s *stallStore) stall(ctx context.Context) error {
	s.mu.Lock()
	d := time.Until(s.until)
	s.mu.Unlock()
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func (s *stallStore) PutIntent(ctx context.Context, in fleet.Intent) (int64, error) {
	if err := s.stall(ctx); err != nil {
		return 0, err
	}
	return s.MemoryLeaseStore.PutIntent(ctx, in)
}

func (s *stallStore) RenewLease(ctx context.Context, l fleet.Lease) (fleet.Lease, error) {
	if err := s.stall(ctx); err != nil {
		return fleet.Lease{}, err
	}
	return s.MemoryLeaseStore.RenewLease(ctx, l)
}

func (s *stallStore) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (fleet.Lease, error) {
	if err := s.stall(ctx); err != nil {
		return fleet.Lease{}, err
	}
	return s.MemoryLeaseStore.AcquireLease(ctx, name, holder, ttl)
}

// The holder's connection to the database stalls for 80 s (less than the
// default CallTimeout of 90 s) just as an Acquire on it has picked the
// fleet's only idle node and is writing its busy mark. Its lease runs
// out; the other replica takes the fleet over and hands the node to a job
// (its mark carried out and acknowledged). Then the stalled write goes
// through and the first Acquire returns the same node: handed out twice,
// by a replica that had lost its lease before it acted (issue 14 point 2:
// a replica that lost its lease cannot act).
func TestTesterOStalledHolderHandsOutANodeTheNewHolderHandedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		shared := fleet.NewMemoryLeaseStore(nil)
		sa, sb := &stallStore{MemoryLeaseStore: shared}, &stallStore{MemoryLeaseStore: shared}
		a := startReplica(t, e, sa, "r0")
		name := fleetForO("st", "r0") // stays with r0 when r1 joins
		require.NoError(t, a.m.Apply(t.Context(), spec(name, 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, shared, map[string]int{name: 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		b := startReplica(t, e, sb, "r1")
		name2 := movingFleetO("other") // b is live and holds fleets of its own
		require.NoError(t, b.m.Apply(t.Context(), spec(name2, 1, vultrVM("ewr"))))
		time.Sleep(2 * time.Minute)
		require.Equal(t, 0, holderOfO(t, shared, name, []string{"r0", "r1"}))
		sa.mu.Lock()
		sa.until = time.Now().Add(80 * time.Second)
		sa.mu.Unlock()
		type res struct {
			in  fleet.Instance
			err error
		}
		first := make(chan res, 1)
		start := time.Now()
		go func() {
			in, err := a.m.Acquire(t.Context(), name)
			t.Logf("r0's Acquire returned after %s: %s %v", time.Since(start), in.RequestID, err)
			first <- res{in, err}
		}()
		var second fleet.Instance
		for {
			time.Sleep(5 * time.Second)
			in, err := b.m.Acquire(t.Context(), name)
			if err == nil {
				second = in
				t.Logf("r1's Acquire returned after %s: %s", time.Since(start), in.RequestID)
				break
			}
			require.Less(t, time.Since(sa.until), -5*time.Second, "r1 never took the fleet over: %v", err)
		}
		r := <-first
		if r.err == nil {
			assert.NotEqual(t, second.RequestID, r.in.RequestID, "the fleet's only node handed out by both replicas (r0 lost its lease while its Acquire waited)")
		}
		require.NoError(t, a.stop())
		require.NoError(t, b.stop())
	})
}

// MarkBusy's docs: "an error for an instance that is not ready (one being
// released included: its Release, or its fleet's Delete, recorded whether
// carried out yet or not)". With replicas, a Release recorded through one
// replica and a MarkBusy of the same node through the other a moment
// later: MarkBusy answers nil (the orchestrator starts a job on the
// node), and the node is released under the job.
func TestTesterOMarkBusyAfterAReleaseRecordedThroughTheOtherReplica(t *testing.T) {
	for _, relOnHolder := range []bool{true, false} {
		t.Run(map[bool]string{true: "release on holder", false: "release on non-holder"}[relOnHolder], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := fleet.NewMemoryLeaseStore(nil)
				rs := newReplicaSet(t, e, store, 2)
				require.NoError(t, rs.ms[0].Apply(t.Context(), spec("mb", 1, vultrVM("ewr"))))
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"mb": 1}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged")
				}
				h := rs.holderOf(t, "mb")
				require.GreaterOrEqual(t, h, 0)
				rel, mark := rs.ms[h], rs.ms[1-h]
				if !relOnHolder {
					rel, mark = mark, rel
				}
				x := storedIdle(t, store, "mb")[0].Instance
				_, err := rel.Release(t.Context(), x.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
				require.NoError(t, err)
				err = mark.MarkBusy(x.ID)
				assert.Error(t, err, "the node's Release is recorded: MarkBusy must refuse it")
				rs.stopAll()
			})
		})
	}
}
