package fleet_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readFailStore is a shared store whose reads of records and intents fail
// while it is down (a database refusing connections for a moment, or one
// whose reads hang until their context ends); writes and leases work.
type readFailStore struct {
	*fleet.MemoryLeaseStore
	mu   sync.Mutex
	down chan struct{}   // closed when the reads work again; nil while they do
	hang bool            // reads wait for their context's end (else fail at once)
	only map[string]bool // the reads (by method) that fail; nil: all
}

var errReadDown = errors.New("read: connection refused")

// fail stops reads (those of the methods named in only, else all) until
// up: each fails at once, or with hang waits for its context's end (or for
// up) and answers its context's error.
func (s *readFailStore) fail(hang bool, only ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down, s.hang, s.only = make(chan struct{}), hang, nil
	for _, name := range only {
		if s.only == nil {
			s.only = map[string]bool{}
		}
		s.only[name] = true
	}
}

func (s *readFailStore) up() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down != nil {
		close(s.down)
		s.down = nil
	}
}

// read is the error of a read by method made now (nil while it works).
func (s *readFailStore) read(ctx context.Context, method string) error {
	s.mu.Lock()
	down, hang := s.down, s.hang
	if s.only != nil && !s.only[method] {
		down = nil
	}
	s.mu.Unlock()
	switch {
	case down == nil:
		return nil
	case !hang:
		return errReadDown
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-down:
		return errReadDown
	}
}

// readThen is a read of the MemoryLeaseStore under s's failures: the
// failure of call when there is one, else the store's answer.
func readThen[T any](s *readFailStore, ctx context.Context, call string, f func() (T, error)) (T, error) {
	if err := s.read(ctx, call); err != nil {
		var zero T
		return zero, err
	}
	return f()
}

func (s *readFailStore) Fleet(ctx context.Context, name string) (fleet.FleetRecord, error) {
	return readThen(s, ctx, "Fleet", func() (fleet.FleetRecord, error) { return s.MemoryLeaseStore.Fleet(ctx, name) })
}

func (s *readFailStore) Fleets(ctx context.Context) ([]fleet.FleetRecord, error) {
	return readThen(s, ctx, "Fleets", func() ([]fleet.FleetRecord, error) { return s.MemoryLeaseStore.Fleets(ctx) })
}

func (s *readFailStore) Instance(ctx context.Context, id string) (fleet.InstanceRecord, error) {
	return readThen(s, ctx, "Instance", func() (fleet.InstanceRecord, error) { return s.MemoryLeaseStore.Instance(ctx, id) })
}

func (s *readFailStore) Instances(ctx context.Context) ([]fleet.InstanceRecord, error) {
	return readThen(s, ctx, "Instances", func() ([]fleet.InstanceRecord, error) { return s.MemoryLeaseStore.Instances(ctx) })
}

func (s *readFailStore) Intents(ctx context.Context, f string) ([]fleet.Intent, error) {
	return readThen(s, ctx, "Intents", func() ([]fleet.Intent, error) { return s.MemoryLeaseStore.Intents(ctx, f) })
}

func (s *readFailStore) IntentsAfter(ctx context.Context, f string, after int64) ([]fleet.Intent, error) {
	return readThen(s, ctx, "IntentsAfter", func() ([]fleet.Intent, error) { return s.MemoryLeaseStore.IntentsAfter(ctx, f, after) })
}

func (s *readFailStore) ReleaseIntents(ctx context.Context, f, requestID string, after int64) ([]fleet.Intent, error) {
	return readThen(s, ctx, "ReleaseIntents", func() ([]fleet.Intent, error) {
		return s.MemoryLeaseStore.ReleaseIntents(ctx, f, requestID, after)
	})
}

// listOnlyStore hides every optional capability of its LeaseStore
// (RecordFinder among them): a replica reads every record to find one.
type listOnlyStore struct{ fleet.LeaseStore }

// Two replicas, one fleet of one Vultr VM, converged. The shared store's
// reads fail for a moment (refused at once, or hanging until the call's
// deadline) and the orchestrator calls Release and MarkIdle on the replica
// that does not hold the fleet, Delete on both, Acquire on the one that
// does not hold it. A failed read is not an absent record: Delete answers
// ErrNotRecorded (as Apply does in the same moment: storedDeleting), so
// that the caller calls it again; Release and MarkIdle ErrNotRecorded
// (nothing was recorded) wrapping the read's error; Acquire ErrNoIdle (the
// fleet may exist and may be being deleted: not known). None answers
// ErrNotFound. Once the store reads again, Delete is called again and the
// server is released.
// (tester AO: Delete on either replica, holder included, answered
// ErrNotFound ("gpufleet: fleet dl: not found"), Acquire on the non-holder
// ErrNotFound, Release and MarkIdle the bare store error ("read: connection
// refused"), before; a caller told the fleet was unknown did not Delete
// again, and the VM billed on: 8 started hours, $0.06 at 0.007 USD/h, 7 h
// later, for as long as nobody looks.)
func TestReplicaCallsTellAFailedStoreReadFromNotFound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hang     bool // reads hang until the call's deadline (else refused)
		listOnly bool // the store is no RecordFinder: every record is read
	}{
		{name: "refused"},
		{name: "refused/list only", listOnly: true},
		{name: "deadline", hang: true},
		{name: "deadline/list only", hang: true, listOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := &readFailStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil)}
				var shared fleet.LeaseStore = store
				if tc.listOnly {
					shared = listOnlyStore{store}
				}
				rs := newReplicaSet(t, e, shared, 2)
				require.NoError(t, rs.ms[0].Apply(t.Context(), spec("dl", 1, vultrVM("ewr"))))
				for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"dl": 1}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged")
				}
				holder := leaseHolderIndex(t, store, "dl", []string{"r0", "r1"})
				require.GreaterOrEqual(t, holder, 0)
				other := 1 - holder
				node := rs.ms[holder].Instances("dl")[0]

				// Each call with a context is cut by a deadline of its own;
				// MarkIdle (none) by Policy.CallTimeout, so it comes last.
				ctx := func() context.Context {
					ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
					t.Cleanup(cancel)
					return ctx
				}
				store.fail(tc.hang)
				_, relErr := rs.ms[other].Release(ctx(), node.ID)
				delErr := rs.ms[other].Delete(ctx(), "dl")
				holderDelErr := rs.ms[holder].Delete(ctx(), "dl")
				_, acqErr := rs.ms[other].Acquire(ctx(), "dl")
				idleErr := rs.ms[other].MarkIdle(node.ID)
				store.up()
				t.Logf("Release: %v\nMarkIdle: %v\nDelete: %v\nDelete on the holder: %v\nAcquire: %v",
					relErr, idleErr, delErr, holderDelErr, acqErr)

				wantCause := errReadDown
				if tc.hang {
					wantCause = context.DeadlineExceeded
				}
				for call, err := range map[string]error{"Release": relErr, "MarkIdle": idleErr,
					"Delete": delErr, "Delete on the holder": holderDelErr} {
					assert.ErrorIs(t, err, fleet.ErrNotRecorded, "%s: its intent was not stored", call)
					assert.NotErrorIs(t, err, fleet.ErrNotFound, "%s, the store's read failing", call)
					assert.ErrorIs(t, err, wantCause, "%s wraps the read's error", call)
				}
				assert.ErrorIs(t, acqErr, fleet.ErrNoIdle, "Acquire: nothing handed out here")
				assert.NotErrorIs(t, acqErr, fleet.ErrNotFound, "Acquire on a fleet that exists, the store's read failing")
				assert.ErrorIs(t, acqErr, wantCause, "Acquire wraps the read's error")
				assert.Equal(t, 1, e.liveServers(), "nothing was recorded: the node runs on")

				// Called again once the store reads: the fleet is deleted.
				require.NoError(t, rs.ms[other].Delete(t.Context(), "dl"))
				for deadline := time.Now().Add(time.Hour); e.liveServers() > 0; time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "the server outlived its fleet's Delete")
				}
				rs.stopAll()
			})
		})
	}
}

// A failed read of one kind only is no absent record either. A fleet
// applied a moment ago, its record not stored yet (its Apply's intent
// is), while the store's reads of intents fail: Delete answers
// ErrNotRecorded, Acquire ErrNoIdle, not ErrNotFound (the fleet is known
// by its Apply's intent only). An instance whose record reads while its
// fleet's does not: Release answers ErrNotRecorded rather than record its
// release and answer a time by a release policy that may not be the
// fleet's.
// (Before: Delete and Acquire answered ErrNotFound; Release answered nil
// with the time by Policy.Release.)
func TestReplicaCallsTellAPartlyFailedStoreReadFromNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &readFailStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil)}
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("dl", 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"dl": 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		holder := leaseHolderIndex(t, store, "dl", []string{"r0", "r1"})
		require.GreaterOrEqual(t, holder, 0)
		other := 1 - holder
		node := rs.ms[holder].Instances("dl")[0]

		store.fail(false, "Fleet", "Fleets")
		at, relErr := rs.ms[other].Release(t.Context(), node.ID)
		store.up()
		t.Logf("Release, its fleet's record unread: %v, %v", at, relErr)
		assert.ErrorIs(t, relErr, fleet.ErrNotRecorded, "Release: its fleet's policy unread, nothing recorded")
		assert.ErrorIs(t, relErr, errReadDown)

		rs.stopAll() // no loop takes the next Apply up: only its intent is stored
		require.NoError(t, rs.ms[other].Apply(t.Context(), spec("fresh", 1, vultrVM("ewr"))))
		_, err := store.MemoryLeaseStore.Fleet(t.Context(), "fresh")
		require.ErrorIs(t, err, fleet.ErrNotFound, "the fresh fleet has no record yet")
		store.fail(false, "Intents", "IntentsAfter")
		delErr := rs.ms[other].Delete(t.Context(), "fresh")
		_, acqErr := rs.ms[other].Acquire(t.Context(), "fresh")
		store.up()
		t.Logf("Delete of a fleet applied, its intents unread: %v; Acquire: %v", delErr, acqErr)
		assert.ErrorIs(t, delErr, fleet.ErrNotRecorded, "Delete: the fleet's Apply is unread, nothing recorded")
		assert.NotErrorIs(t, delErr, fleet.ErrNotFound)
		assert.ErrorIs(t, delErr, errReadDown)
		assert.ErrorIs(t, acqErr, fleet.ErrNoIdle, "Acquire: the fleet's Apply is unread")
		assert.NotErrorIs(t, acqErr, fleet.ErrNotFound)
		assert.ErrorIs(t, acqErr, errReadDown)
		assert.NoError(t, rs.ms[other].Delete(t.Context(), "fresh"), "Delete called again, the store reading")
	})
}

// Fleets on a replica reads the shared store; when that read fails it
// answered no fleet at all, so a caller concluded its fleets were gone and
// did not Delete them (helper fixao2, beside tester AO's probe). Now the
// holder still lists the fleet it knows, and ListFleets says the list may
// be short (ErrStoreUnreadable, wrapping the store's error); once the store
// reads again the error is gone.
func TestReplicaFleetsWhenTheStoreCannotBeRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &readFailStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil)}
		rs := newReplicaSet(t, e, store, 2)
		require.NoError(t, rs.ms[0].Apply(t.Context(), spec("lf", 1, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"lf": 1}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		holder := leaseHolderIndex(t, store, "lf", []string{"r0", "r1"})
		require.GreaterOrEqual(t, holder, 0)
		store.fail(false)
		specs, err := rs.ms[holder].ListFleets(t.Context())
		assert.ErrorIs(t, err, fleet.ErrStoreUnreadable)
		assert.ErrorIs(t, err, errReadDown)
		if assert.Len(t, specs, 1, "the fleet this replica holds") {
			assert.Equal(t, "lf", specs[0].Name)
		}
		assert.Len(t, rs.ms[holder].Fleets(), 1, "Fleets lists it too")
		store.up()
		specs, err = rs.ms[1-holder].ListFleets(t.Context())
		assert.NoError(t, err)
		assert.Len(t, specs, 1)
	})
}
