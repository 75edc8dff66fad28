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

// leaseHolderIndex returns the index of the replica holding fleet's lease, by
// the store's leases (-1: none).
func leaseHolderIndex(t *testing.T, store fleet.LeaseStore, fleetName string, ids []string) int {
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
// dies (crash) or closes, and the other replica takes the fleet over: the
// stored busy mark is voided by a stored IntentVoid, so the node stays idle
// and is handed out (before the fix the void was in the dead holder's
// memory only, and the node stayed busy for ever with no job).
func TestVoidedAcquireMarkNotCarriedOutByTheNextHolder(t *testing.T) {
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
				h := leaseHolderIndex(t, store, "vo", []string{"r0", "r1"})
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
				require.Equal(t, 1-h, leaseHolderIndex(t, store, "vo", []string{"r0", "r1"}), "taken over")
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

// rendezvousPick is the replicas' pick of a fleet's holder (copied from the
// package: FNV-1a of name and holder, MurmurHash3's finalizer, highest).
func rendezvousPick(key string, holders []string) string {
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

// movingFleet names a fleet that r0 holds alone and that falls to r1 once
// r1 is live.
func movingFleet(prefix string) string { return fleetForHolder(prefix, "r1") }

// fleetForHolder names a fleet that falls to holder among r0 and r1.
func fleetForHolder(prefix, holder string) string {
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		if rendezvousPick(name, []string{"r0", "r1"}) == holder {
			return name
		}
	}
}

// The same without any crash: one replica runs, a second one joins (scale
// out), and the fleet is handed over to it by the hashing. The holder had
// voided the busy mark of a failed Acquire: the new holder does not carry
// it out either.
func TestVoidedAcquireMarkNotCarriedOutAfterAHandover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &lostAnswerStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil)}
		r0 := startReplica(t, e, store, "r0")
		name := movingFleet("ho")
		require.NoError(t, r0.m.Apply(t.Context(), spec(name, 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{name: 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		require.Equal(t, 0, leaseHolderIndex(t, store, name, []string{"r0", "r1"}))
		store.mu.Lock()
		store.armed, store.failRead = true, true
		store.mu.Unlock()
		_, err := r0.m.Acquire(t.Context(), name)
		require.ErrorIs(t, err, fleet.ErrNotRecorded, "the answer was lost and the read failed")
		r1 := startReplica(t, e, store, "r1")
		time.Sleep(3 * time.Minute)
		require.Equal(t, 1, leaseHolderIndex(t, store, name, []string{"r0", "r1"}), "handed over to r1")
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
// out. The holder acknowledges the intents again at its next sync (it
// counted them as acknowledged all the same before the fix: the Delete
// intent stayed stored for ever, and the fleet's name could never be
// applied again, "being deleted").
func TestFailedAckOfADeleteIsRetried(t *testing.T) {
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

// lostPutStore fails the next PutIntent of a kind: with commit, the write
// is stored and its answer lost (a timeout after the commit), else nothing
// is stored; with failRead, the next read of the fleet's intents fails
// too.
type lostPutStore struct {
	*fleet.MemoryLeaseStore
	mu               sync.Mutex
	kind             fleet.IntentKind
	commit, failRead bool
	readFails        bool
}

func (s *lostPutStore) PutIntent(ctx context.Context, in fleet.Intent) (int64, error) {
	s.mu.Lock()
	hit := in.Kind == s.kind
	if hit {
		s.kind = ""
		s.readFails = s.failRead
	}
	s.mu.Unlock()
	if !hit {
		return s.MemoryLeaseStore.PutIntent(ctx, in)
	}
	if s.commit {
		if _, err := s.MemoryLeaseStore.PutIntent(ctx, in); err != nil {
			return 0, err
		}
		return 0, errors.New("timeout after commit")
	}
	return 0, errors.New("connection refused")
}

func (s *lostPutStore) readFail() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.readFails
	s.readFails = false
	return f
}

func (s *lostPutStore) Intents(ctx context.Context, f string) ([]fleet.Intent, error) {
	if f != "" && s.readFail() {
		return nil, errors.New("read: connection reset")
	}
	return s.MemoryLeaseStore.Intents(ctx, f)
}

func (s *lostPutStore) IntentsAfter(ctx context.Context, f string, after int64) ([]fleet.Intent, error) {
	if s.readFail() {
		return nil, errors.New("read: connection reset")
	}
	return s.MemoryLeaseStore.IntentsAfter(ctx, f, after)
}

// Apply whose intent write answers an error. ErrNotRecorded's docs say
// nothing of the call will be carried out, yet before the fix an Apply
// whose write committed with its answer lost answered ErrNotRecorded and
// the fleet was created all the same (servers bought for a caller told
// nothing would happen). Now: a write found stored answers nil and is
// carried out; one that cannot be read back answers ErrMaybeRecorded (and
// calling again is safe); one not stored answers ErrNotRecorded and
// nothing happens.
func TestApplyWithALostAnswer(t *testing.T) {
	for _, c := range []struct {
		name             string
		commit, failRead bool
	}{{"found stored", true, false}, {"read fails too", true, true}, {"not stored", false, false}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := &lostPutStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil), kind: fleet.IntentApply,
					commit: c.commit, failRead: c.failRead}
				rs := newReplicaSet(t, e, store, 2)
				err := rs.ms[0].Apply(t.Context(), spec("lp", 2, vultrVM("ewr")))
				switch {
				case c.failRead:
					require.ErrorIs(t, err, fleet.ErrMaybeRecorded)
					assert.NotErrorIs(t, err, fleet.ErrNotRecorded)
					require.NoError(t, rs.ms[1].Apply(t.Context(), spec("lp", 2, vultrVM("ewr"))), "calling again is safe")
				case c.commit:
					require.NoError(t, err, "the intent is stored: Apply is recorded")
				default:
					require.ErrorIs(t, err, fleet.ErrNotRecorded)
				}
				time.Sleep(30 * time.Minute)
				if c.commit {
					assert.Len(t, rs.ms[1].Fleets(), 1)
					assert.Equal(t, 2, e.liveServers(), "the fleet is carried out once")
				} else {
					assert.Empty(t, rs.ms[1].Fleets(), "Apply answered ErrNotRecorded: no fleet")
					assert.Zero(t, e.liveServers(), "Apply answered ErrNotRecorded: nothing bought")
				}
				rs.stopAll()
			})
		})
	}
}

// The same for Delete: its write commits but its answer is lost, and the
// fleet is deleted; Delete answers nil.
func TestDeleteWithALostAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &lostPutStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil), commit: true}
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("ld", 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"ld": 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		store.mu.Lock()
		store.kind = fleet.IntentDelete
		store.mu.Unlock()
		require.NoError(t, rs.ms[1].Delete(t.Context(), "ld"), "the intent is stored: Delete is recorded")
		time.Sleep(30 * time.Minute)
		assert.Empty(t, rs.ms[0].Fleets())
		assert.Zero(t, e.liveServers())
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
// through. Before the fix the first Acquire returned the same node: handed
// out twice, by a replica that had lost its lease before it acted (issue
// 14 point 2: a replica that lost its lease cannot act). Now it finds its
// lease lost, answers ErrNoIdle naming the new holder, and voids its mark,
// which leaves the node busy with the new holder's job.
func TestStalledHolderDoesNotHandOutANodeTheNewHolderHandedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		shared := fleet.NewMemoryLeaseStore(nil)
		sa, sb := &stallStore{MemoryLeaseStore: shared}, &stallStore{MemoryLeaseStore: shared}
		a := startReplica(t, e, sa, "r0")
		name := fleetForHolder("st", "r0") // stays with r0 when r1 joins
		require.NoError(t, a.m.Apply(t.Context(), spec(name, 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, shared, map[string]int{name: 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		b := startReplica(t, e, sb, "r1")
		name2 := movingFleet("other") // b is live and holds fleets of its own
		require.NoError(t, b.m.Apply(t.Context(), spec(name2, 1, vultrVM("ewr"))))
		time.Sleep(2 * time.Minute)
		require.Equal(t, 0, leaseHolderIndex(t, shared, name, []string{"r0", "r1"}))
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
		} else {
			require.ErrorIs(t, r.err, fleet.ErrNoIdle)
			var held *fleet.LeaseHeldError
			require.ErrorAs(t, r.err, &held)
			assert.Equal(t, "r1", held.Holder)
		}
		time.Sleep(2 * time.Minute) // r0's mark and its void carried out (the fleet is back with r0)
		h := []*fleet.Manager{a.m, b.m}[leaseHolderIndex(t, shared, name, []string{"r0", "r1"})]
		got := h.Instances(name)
		require.Len(t, got, 1)
		assert.Equal(t, fleet.StatusBusy, got[0].Status, "r1 handed the node out: the void of r0's mark leaves it busy")
		_, err := h.Acquire(t.Context(), name)
		assert.ErrorIs(t, err, fleet.ErrNoIdle, "the node is r1's job's")
		ins, err := shared.Intents(t.Context(), name)
		require.NoError(t, err)
		assert.Empty(t, ins, "every intent carried out and acknowledged")
		require.NoError(t, a.stop())
		require.NoError(t, b.stop())
	})
}

// MarkBusy's docs: "an error for an instance that is not ready (one being
// released included: its Release, or its fleet's Delete, recorded whether
// carried out yet or not)". With replicas, a Release recorded through one
// replica and a MarkBusy (or MarkIdle) of the same node through the other
// a moment later: before the fix MarkBusy answered nil (the orchestrator
// started a job on the node, released under the job); now the replica
// reads the fleet's stored intents first and refuses.
func TestMarkBusyRefusedAfterAReleaseRecordedThroughTheOtherReplica(t *testing.T) {
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
				err = mark.MarkIdle(x.RequestID)
				assert.Error(t, err, "the node's Release is recorded: MarkIdle must refuse it")
				rs.stopAll()
			})
		})
	}
}

// voidFailStore is a lostAnswerStore whose IntentVoid writes fail while
// voidFails is positive.
type voidFailStore struct {
	*lostAnswerStore
	voidFails, tries int
}

func (s *voidFailStore) PutIntent(ctx context.Context, in fleet.Intent) (int64, error) {
	if in.Kind == fleet.IntentVoid {
		s.mu.Lock()
		s.tries++
		fail := s.voidFails > 0
		if fail {
			s.voidFails--
		}
		s.mu.Unlock()
		if fail {
			return 0, errors.New("void: connection refused")
		}
	}
	return s.lostAnswerStore.PutIntent(ctx, in)
}

// The void of a failed Acquire cannot be written when Acquire answers (the
// store refuses it three times): the holder's loop writes it later, so the
// replica that takes the fleet over after the holder dies finds the node
// idle.
func TestVoidOfAFailedAcquireWrittenByTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &voidFailStore{lostAnswerStore: &lostAnswerStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil)}, voidFails: 3}
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("vl", 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"vl": 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		h := leaseHolderIndex(t, store, "vl", []string{"r0", "r1"})
		require.GreaterOrEqual(t, h, 0)
		store.mu.Lock()
		store.armed, store.failRead = true, true
		store.mu.Unlock()
		_, err := rs.ms[h].Acquire(t.Context(), "vl")
		require.ErrorIs(t, err, fleet.ErrNotRecorded)
		time.Sleep(2 * time.Minute)
		store.mu.Lock()
		tries := store.tries
		store.mu.Unlock()
		require.Equal(t, 4, tries, "written at once, then by the loop until stored")
		rs.stop(h) // crash: only what is stored survives
		time.Sleep(3 * time.Minute)
		other := rs.ms[1-h]
		require.Equal(t, 1-h, leaseHolderIndex(t, store, "vl", []string{"r0", "r1"}), "taken over")
		got := other.Instances("vl")
		require.Len(t, got, 1)
		assert.Equal(t, fleet.StatusIdle, got[0].Status, "the void was stored: the node is idle")
		_, err = other.Acquire(t.Context(), "vl")
		assert.NoError(t, err)
		rs.stop(1 - h)
	})
}

// An IntentVoid stored before the busy mark it voids (the mark's write
// committed late, after its Acquire had given up and voided it) is
// carried out first; the holder then dies, and the mark comes to the
// next holder: it skips it (the void is kept on the fleet's record), and
// the node stays idle.
func TestVoidStoredBeforeItsBusyMarkSkipsTheMarkOnTheNextHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("vb", 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"vb": 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		h := leaseHolderIndex(t, store, "vb", []string{"r0", "r1"})
		require.GreaterOrEqual(t, h, 0)
		id := storedIdle(t, store, "vb")[0].Instance.RequestID
		_, err := store.PutIntent(t.Context(), fleet.Intent{Fleet: "vb", Kind: fleet.IntentVoid, InstanceID: id, Acquire: "late"})
		require.NoError(t, err)
		time.Sleep(time.Minute)
		ins, err := store.Intents(t.Context(), "vb")
		require.NoError(t, err)
		require.Empty(t, ins, "the void is carried out and acknowledged")
		rs.stop(h)
		time.Sleep(3 * time.Minute)
		require.Equal(t, 1-h, leaseHolderIndex(t, store, "vb", []string{"r0", "r1"}), "taken over")
		_, err = store.PutIntent(t.Context(), fleet.Intent{Fleet: "vb", Kind: fleet.IntentBusy, InstanceID: id, Acquire: "late"})
		require.NoError(t, err)
		time.Sleep(time.Minute)
		other := rs.ms[1-h]
		got := other.Instances("vb")
		require.Len(t, got, 1)
		assert.Equal(t, fleet.StatusIdle, got[0].Status, "the voided mark is skipped")
		_, err = other.Acquire(t.Context(), "vb")
		assert.NoError(t, err)
		rs.stop(1 - h)
	})
}

// Release and MarkIdle whose intent write commits with its answer lost:
// found stored, they answer nil and are carried out.
func TestReleaseAndMarkIdleWithALostAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &lostPutStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil), commit: true}
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("lr", 2, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"lr": 2}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		h := rs.holderOf(t, "lr")
		require.GreaterOrEqual(t, h, 0)
		in, err := rs.ms[h].Acquire(t.Context(), "lr")
		require.NoError(t, err)
		store.mu.Lock()
		store.kind = fleet.IntentIdle
		store.mu.Unlock()
		require.NoError(t, rs.ms[1-h].MarkIdle(in.RequestID), "stored: recorded")
		idle := storedIdle(t, store, "lr")
		store.mu.Lock()
		store.kind = fleet.IntentRelease
		store.mu.Unlock()
		_, err = rs.ms[1-h].Release(t.Context(), idle[0].Instance.ID)
		require.NoError(t, err, "stored: recorded")
		time.Sleep(time.Minute)
		recs, err := store.Instances(t.Context())
		require.NoError(t, err)
		var terminating, busy int
		for _, r := range recs {
			if r.Termination != nil {
				terminating++
			}
			if r.Instance.Status == fleet.StatusBusy {
				busy++
			}
		}
		assert.Equal(t, 1, terminating, "the Release is carried out")
		assert.Zero(t, busy, "the MarkIdle is carried out")
		rs.stopAll()
	})
}

// interleaveStore stores, just before the next busy mark of an Acquire,
// another Acquire's busy mark of the same node and, with void, that
// mark's void (a stale holder's mark landing late, then voided).
type interleaveStore struct {
	*fleet.MemoryLeaseStore
	mu         sync.Mutex
	armed      bool
	void, done bool
}

func (s *interleaveStore) PutIntent(ctx context.Context, in fleet.Intent) (int64, error) {
	s.mu.Lock()
	hit := s.armed && in.Kind == fleet.IntentBusy && in.Acquire != ""
	if hit {
		s.armed = false
	}
	s.mu.Unlock()
	if hit {
		other := fleet.Intent{Fleet: in.Fleet, Kind: fleet.IntentBusy, InstanceID: in.InstanceID, Acquire: "stale"}
		if _, err := s.MemoryLeaseStore.PutIntent(ctx, other); err != nil {
			return 0, err
		}
		if s.void {
			other.Kind = fleet.IntentVoid
			if _, err := s.MemoryLeaseStore.PutIntent(ctx, other); err != nil {
				return 0, err
			}
		}
	}
	return s.MemoryLeaseStore.PutIntent(ctx, in)
}

// Another Acquire's busy mark of the node lands between an Acquire's pick
// and its own mark. When that mark is voided first, the node is not taken:
// it is handed out (and stays busy). When it is not, the Acquire gives the
// node up and voids its own mark; once the stale mark is voided too, the
// node is idle, not busy for ever from the second (no-op) mark.
func TestAcquireAfterAnInterleavedMarkOfTheSameNode(t *testing.T) {
	for _, voidFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "voided before", false: "voided after"}[voidFirst], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := &interleaveStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil), void: voidFirst}
				rs := newReplicaSet(t, e, store, 2)
				require.NoError(t, rs.ms[0].Apply(t.Context(), spec("il", 1, vultrVM("ewr"))))
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"il": 1}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged")
				}
				h := rs.holderOf(t, "il")
				require.GreaterOrEqual(t, h, 0)
				store.mu.Lock()
				store.armed = true
				store.mu.Unlock()
				in, err := rs.ms[h].Acquire(t.Context(), "il")
				if voidFirst {
					require.NoError(t, err, "the mark between is void: the node is free")
				} else {
					require.ErrorIs(t, err, fleet.ErrNoIdle, "the node was taken between")
					id := rs.ms[h].Instances("il")[0].RequestID
					_, err := store.MemoryLeaseStore.PutIntent(t.Context(), fleet.Intent{Fleet: "il", Kind: fleet.IntentVoid, InstanceID: id, Acquire: "stale"})
					require.NoError(t, err)
				}
				time.Sleep(time.Minute)
				got := rs.ms[h].Instances("il")
				require.Len(t, got, 1)
				if voidFirst {
					assert.Equal(t, in.RequestID, got[0].RequestID)
					assert.Equal(t, fleet.StatusBusy, got[0].Status, "handed out: busy")
				} else {
					assert.Equal(t, fleet.StatusIdle, got[0].Status, "nobody got the node: idle")
					_, err = rs.ms[h].Acquire(t.Context(), "il")
					assert.NoError(t, err)
				}
				rs.stopAll()
			})
		})
	}
}

// Two Acquires' busy marks of one node are carried out before either is
// voided (the second Acquire saw the first's mark and gave the node up):
// the second is a no-op, so the voids of both leave the node idle, not
// busy for ever because the second mark hid who made it busy.
func TestVoidsOfTwoCarriedOutAcquireMarksLeaveTheNodeIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 2)
		h := convergedHolder(t, rs, "tw", 1)
		id := rs.ms[h].Instances("tw")[0].RequestID
		put := func(kind fleet.IntentKind, token string) {
			_, err := store.PutIntent(t.Context(), fleet.Intent{Fleet: "tw", Kind: kind, InstanceID: id, Acquire: token})
			require.NoError(t, err)
		}
		put(fleet.IntentBusy, "first")
		put(fleet.IntentBusy, "second")
		time.Sleep(time.Minute)
		require.Equal(t, fleet.StatusBusy, rs.ms[h].Instances("tw")[0].Status, "both marks carried out")
		put(fleet.IntentVoid, "second")
		put(fleet.IntentVoid, "first")
		time.Sleep(time.Minute)
		assert.Equal(t, fleet.StatusIdle, rs.ms[h].Instances("tw")[0].Status, "both Acquires answered errors: nobody uses the node")
		rs.stopAll()
	})
}
