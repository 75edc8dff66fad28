package fleet_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/internal/steppedclock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeThroughOutage has one Manager (not replicas) on a Store whose
// writes fail from now on: what record does on it (a call that answers
// nil) is then not stored by the loop; 10 s later the Manager is closed and
// the Store is back a minute into Close; a new Manager starts on the same
// Store when Close returns. It returns Close's time.
func closeThroughOutage(t *testing.T, e *env, store *flakyStore, record func()) time.Time {
	t.Helper()
	stop := e.running()
	store.down.Store(true)
	record()
	time.Sleep(10 * time.Second)
	stop()
	closed := time.Now()
	time.AfterFunc(time.Minute, func() { store.down.Store(false) })
	e.m.Close()
	assert.False(t, store.down.Load(), "Close returned before the store was back")
	e.m = e.manager(store)
	return closed
}

// Close promises that a call that returned nil is never lost: what the loop
// had not written is written at Close, and a new Manager with the same Store
// resumes it. The Store refuses writes around a planned restart: while the
// writes fail, a Vultr VM's job ends (MarkIdle answers nil), or its fleet is
// deleted (Delete answers nil); the Manager is closed, the Store is back a
// minute into Close, and a new Manager starts on it. The node must go by
// its hour's last safe moment: at most 2 hours billed (the restart is in the
// first hour).
//
// (tester AP: 7 h billed and still billing after 6 h before: Close wrote
// once and dropped the error; the MarkIdle case left the node busy in the
// Store, the Delete case the fleet as if never deleted.)
func TestCloseStoresIntentsThroughAStoreOutage(t *testing.T) {
	for _, what := range []string{"MarkIdle", "Delete"} {
		t.Run(what, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, store, stop, nodes := vultrOnFlakyStore(t, "cl", 1, 5*time.Minute)
				in, err := e.m.Acquire(t.Context(), "cl")
				require.NoError(t, err)
				require.Equal(t, nodes[0].ID, in.ID)
				time.Sleep(20 * time.Minute)
				stop()
				closeThroughOutage(t, e, store, func() {
					if what == "MarkIdle" {
						require.NoError(t, e.m.MarkIdle(in.ID))
					} else {
						require.NoError(t, e.m.Delete(t.Context(), "cl"))
					}
				})
				stop = e.running()
				time.Sleep(6 * time.Hour)
				stop()
				cs := servers(e.vultr.Ledger().Charges)
				require.Len(t, cs, 1)
				t.Logf("billed %v (%s)", cs[0].Billed, cs[0].Description)
				assert.False(t, cs[0].Live, "the node is still billing")
				assert.LessOrEqual(t, cs[0].Billed, 2*time.Hour)
			})
		})
	}
}

// Close's promise for Acquire: a new Manager with the same Store finds a
// node handed out by Acquire busy. A one-node Vultr fleet's node is handed
// out while the Store refuses writes; the Manager is closed, the Store is
// back a minute into Close, and a new Manager starts on it: its Acquire
// answers ErrNoIdle (the only node runs a job).
//
// (tester AP: the new Manager handed the same node out again before: two
// jobs on one node.)
func TestCloseStoresABusyMarkThroughAStoreOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, store, stop, _ := vultrOnFlakyStore(t, "aq", 1, 5*time.Minute)
		stop()
		var first fleet.Instance
		closeThroughOutage(t, e, store, func() {
			var err error
			first, err = e.m.Acquire(t.Context(), "aq")
			require.NoError(t, err)
		})
		stop = e.running()
		defer stop()
		time.Sleep(time.Minute)
		second, err := e.m.Acquire(t.Context(), "aq")
		if err == nil {
			t.Logf("handed out %s, then %s after the restart", first.ID, second.ID)
		}
		assert.ErrorIs(t, err, fleet.ErrNoIdle, "the fleet's only node runs the first job")
		assert.Equal(t, fleet.StatusBusy, e.only("aq").Status)
	})
}

// The same for a release: a one-node Vultr fleet's node is released at once
// (Release with ReleaseNow: the provider accepts the delete) while the
// Store refuses writes; the Manager is closed, the Store is back a minute
// into Close, and a new Manager starts on it: the release is in the Store,
// and Acquire never hands the server out.
//
// (tester AP: the new Manager handed out the server the provider had
// destroyed before: its record was still idle in the Store.)
func TestCloseStoresAReleaseThroughAStoreOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, store, stop, nodes := vultrOnFlakyStore(t, "rl", 1, 0)
		time.Sleep(20 * time.Minute)
		stop()
		closeThroughOutage(t, e, store, func() {
			_, err := e.m.Release(t.Context(), nodes[0].ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
			require.NoError(t, err)
			time.Sleep(20 * time.Second) // the delete is accepted
		})
		recs, err := store.Instances(t.Context())
		require.NoError(t, err)
		require.Len(t, recs, 1)
		assert.NotNil(t, recs[0].Termination, "the release is stored")
		got, err := e.m.Acquire(t.Context(), "rl")
		assert.False(t, err == nil && got.ID == nodes[0].ID, "the released node handed out again")
	})
}

// When the Store stays down past Close's bound, Close gives up, says so
// with EventStoreWriteFailed, and CloseContext answers ErrNotStored wrapping
// the store's error. It gives up when its ctx ends; Close gives up after
// CloseRetryCalls × Policy.CallTimeout, having written again meanwhile.
func TestCloseReportsRecordsNotStored(t *testing.T) {
	for _, how := range []string{"Close", "CloseContext"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, store, stop, nodes := vultrOnFlakyStore(t, "nr", 1, 5*time.Minute)
				stop()
				store.down.Store(true)
				require.NoError(t, e.m.MarkBusy(nodes[0].ID))
				start, failed := time.Now(), store.failed.Load()
				if how == "Close" {
					e.m.Close()
					bound := fleet.CloseRetryCalls * 90 * time.Second // Policy.CallTimeout's default
					assert.WithinRange(t, start.Add(time.Since(start)), start.Add(bound-30*time.Second), start.Add(bound))
				} else {
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
					defer cancel()
					err := e.m.CloseContext(ctx)
					require.ErrorIs(t, err, fleet.ErrNotStored)
					assert.ErrorIs(t, err, errStoreDown)
					assert.Equal(t, 2*time.Minute, time.Since(start).Round(time.Second))
					assert.NoError(t, e.m.CloseContext(t.Context()), "a second Close answers nil")
				}
				assert.Greater(t, store.failed.Load()-failed, int64(3), "written again while it waited")
				var said bool
				for _, ev := range e.eventsOf(fleet.EventStoreWriteFailed) {
					said = said || strings.Contains(ev.Message, "Close gave up")
				}
				assert.True(t, said, "Close says what it could not store")
			})
		})
	}
}

// A restarted Manager hands out no node read from the Store before a
// listing has shown its server: the Store may be behind the cloud. A
// one-node Vultr fleet's node is released at once while the Store refuses
// writes, and Close gives up before the Store is back (the release is not
// stored: the record says idle); a new Manager starts on the Store. Its
// Acquire must not hand out the destroyed server, at once nor later.
//
// (tester AP: the destroyed server was handed out before.)
func TestRestartHandsOutNoServerReleasedButNotStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, store, stop, nodes := vultrOnFlakyStore(t, "rl", 1, 0)
		time.Sleep(20 * time.Minute)
		store.down.Store(true)
		_, err := e.m.Release(t.Context(), nodes[0].ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
		require.NoError(t, err)
		time.Sleep(30 * time.Second)
		stop()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		require.ErrorIs(t, e.m.CloseContext(ctx), fleet.ErrNotStored)
		time.Sleep(time.Minute)
		store.down.Store(false)
		require.Zero(t, e.liveServers(), "the provider destroyed it")
		e.m = e.manager(store)
		got, err := e.m.Acquire(t.Context(), "rl")
		assert.False(t, err == nil && got.ID == nodes[0].ID, "the released node handed out before any listing")
		stop = e.running()
		defer stop()
		for range 12 {
			got, err := e.m.Acquire(t.Context(), "rl")
			if err == nil {
				require.NotEqual(t, nodes[0].ID, got.ID, "the released node handed out")
				require.NoError(t, e.m.MarkIdle(got.ID))
			}
			time.Sleep(10 * time.Second)
		}
	})
}

// Close's bound is counted from its own pauses, not read off the Manager's
// clock: with a clock that does not move by itself (a stepped test clock,
// whose Sleep returns at once), Close still gives up on a Store that stays
// down, after a bounded number of tries, rather than try for ever.
func TestCloseGivesUpWithAClockThatDoesNotMove(t *testing.T) {
	e := newEnv(t, fleet.Policy{})
	store := &flakyStore{MemoryStore: fleet.NewMemoryStore()}
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{e.vp}, Owner: testOwner, Store: store,
		Clock: steppedclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	require.NoError(t, err)
	require.NoError(t, m.Apply(t.Context(), spec("sc", 1, vultrVM("ewr"))))
	store.down.Store(true)
	done := make(chan struct{})
	go func() { defer close(done); m.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not give up")
	}
	assert.Less(t, store.failed.Load(), int64(30), "tries")
}

// vultrOnFlakyStore starts a Manager on a Store whose writes can be made
// to fail (flakyStore), its loop running, with fleet name of one idle
// Vultr VM (idleTimeout). It returns the env, the store, the loop's stop
// and the fleet's nodes.
func vultrOnFlakyStore(t *testing.T, name string, n int, idleTimeout time.Duration) (*env, *flakyStore, func(), []fleet.Instance) {
	t.Helper()
	e := newEnv(t, fleet.Policy{})
	store := &flakyStore{MemoryStore: fleet.NewMemoryStore()}
	e.m = e.manager(store)
	stop := e.running()
	return e, store, stop, e.idleFleet(name, n, idleTimeout, vultrVM("ewr"))
}
