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
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flakyStore fails every write while down is set.
type flakyStore struct {
	*fleet.MemoryStore
	down   atomic.Bool
	failed atomic.Int64
}

var errStoreDown = errors.New("store down")

func (s *flakyStore) fail() error {
	if s.down.Load() {
		s.failed.Add(1)
		return errStoreDown
	}
	return nil
}

func (s *flakyStore) PutFleet(ctx context.Context, f fleet.FleetRecord) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.MemoryStore.PutFleet(ctx, f)
}

func (s *flakyStore) DeleteFleet(ctx context.Context, name string) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.MemoryStore.DeleteFleet(ctx, name)
}

func (s *flakyStore) PutInstance(ctx context.Context, r fleet.InstanceRecord) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.MemoryStore.PutInstance(ctx, r)
}

func (s *flakyStore) DeleteInstance(ctx context.Context, id string) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.MemoryStore.DeleteInstance(ctx, id)
}

func (s *flakyStore) PutMeta(ctx context.Context, k, v string) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.MemoryStore.PutMeta(ctx, k, v)
}

func injectSlowCreates(t *testing.T, w *t8World, c t8Cloud, d time.Duration) {
	t.Helper()
	f := sim.Fault{Route: c.createRoute, Latency: d}
	if c.name == "vultr" {
		require.NoError(t, w.v.Inject(f))
	} else {
		require.NoError(t, w.h.Inject(f))
	}
}

// TestCloseWithCreatesInFlight: Apply 3 nodes whose creates take 2
// minutes, Close 30 s in, Close again; every method then says ErrClosed. A
// new Manager on the same Store must find the 3 servers (no fourth
// create), and deleting the fleet leaves nothing.
func TestCloseWithCreatesInFlight(t *testing.T) {
	for _, c := range t8Clouds {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := fleet.NewMemoryStore()
				w := newT8World(t, 0, store, fleet.Policy{})
				injectSlowCreates(t, w, c, 2*time.Minute)
				ctx := t.Context()
				require.NoError(t, w.m.Apply(ctx, fleet.Spec{Name: "cl", Nodes: 3, Requirements: c.req}))
				time.Sleep(30 * time.Second)
				w.m.Close()
				w.m.Close()
				w.cancel()
				<-w.done
				assert.ErrorIs(t, w.m.Apply(ctx, fleet.Spec{Name: "cl", Nodes: 1, Requirements: c.req}), fleet.ErrClosed)
				assert.ErrorIs(t, w.m.Delete(ctx, "cl"), fleet.ErrClosed)
				_, err := w.m.Release(ctx, "x")
				assert.ErrorIs(t, err, fleet.ErrClosed)
				assert.ErrorIs(t, w.m.MarkBusy("x"), fleet.ErrClosed)
				assert.ErrorIs(t, w.m.MarkIdle("x"), fleet.ErrClosed)
				_, err = w.m.Acquire(ctx, "cl")
				assert.ErrorIs(t, err, fleet.ErrClosed)
				assert.ErrorIs(t, w.m.Run(ctx), fleet.ErrClosed)
				assert.ErrorIs(t, w.m.Reconcile(ctx), fleet.ErrClosed)

				time.Sleep(10 * time.Minute) // the slow creates land with nobody running
				w.start(t, fleet.Policy{})
				time.Sleep(30 * time.Minute)
				live := 0
				for _, i := range w.m.Instances("cl") {
					if i.Status != fleet.StatusTerminated {
						live++
					}
				}
				assert.Equal(t, 3, live, "the restarted Manager tracks the 3 servers")
				assert.Equal(t, 3, w.createdServers(), "no create beyond the fleet's 3")
				w.waitGone(t, 3*time.Hour)
				w.stop()
				w.assertNoLeak(t)
				if t.Failed() {
					w.dumpEvents(t)
				}
			})
		})
	}
}

// TestStoreDownDuringCreatesAndDeletes: the Store refuses every write
// for 15 minutes, starting while 3 slow creates are under way, and again
// for 15 minutes while the fleet is being deleted; the Manager is then
// restarted on the Store. Nothing may be lost (no leak) or duplicated (3
// creates).
func TestStoreDownDuringCreatesAndDeletes(t *testing.T) {
	for _, c := range t8Clouds {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &flakyStore{MemoryStore: fleet.NewMemoryStore()}
				w := newT8World(t, 0, store, fleet.Policy{})
				injectSlowCreates(t, w, c, time.Minute)
				require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "sd", Nodes: 3, Requirements: c.req}))
				time.Sleep(20 * time.Second)
				store.down.Store(true)
				time.Sleep(15 * time.Minute)
				store.down.Store(false)
				time.Sleep(20 * time.Minute)
				assert.Equal(t, 3, w.createdServers(), "creates while the store was down")
				// restart on the store: it must know all 3
				w.stop()
				w.start(t, fleet.Policy{})
				time.Sleep(20 * time.Minute)
				assert.Equal(t, 3, w.createdServers(), "creates after a restart on the recovered store")
				require.NoError(t, w.m.Delete(t.Context(), "sd", fleet.WithReleasePolicy(fleet.ReleaseNow)))
				time.Sleep(5 * time.Second)
				store.down.Store(true)
				time.Sleep(15 * time.Minute)
				w.stop() // crash-like: a restart while the store is still down
				store.down.Store(false)
				w.start(t, fleet.Policy{})
				w.waitGone(t, 3*time.Hour)
				w.stop()
				w.assertNoLeak(t)
				assert.Positive(t, store.failed.Load(), "the store refused writes")
				if t.Failed() {
					w.dumpEvents(t)
				}
			})
		})
	}
}

// TestCancelledContexts: Apply, Delete and Release with a cancelled
// ctx either fail without effect or take effect; an error must mean nothing
// was recorded.
func TestCancelledContexts(t *testing.T) {
	for _, c := range t8Clouds {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newT8World(t, 0, fleet.NewMemoryStore(), fleet.Policy{})
				dead, cancel := context.WithCancel(context.Background())
				cancel()
				errA := w.m.Apply(dead, fleet.Spec{Name: "cx", Nodes: 1, Requirements: c.req})
				time.Sleep(20 * time.Minute)
				if errA != nil {
					assert.Empty(t, w.m.Fleets(), "Apply failed (%v) yet the fleet exists", errA)
					assert.Zero(t, w.createdServers(), "Apply failed (%v) yet a server was created", errA)
					require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "cx", Nodes: 1, Requirements: c.req}))
					time.Sleep(20 * time.Minute)
				}
				var id string
				for _, i := range w.m.Instances("cx") {
					id = i.ID
				}
				require.NotEmpty(t, id)
				_, errR := w.m.Release(dead, id, fleet.WithReleasePolicy(fleet.ReleaseNow))
				time.Sleep(20 * time.Minute)
				n := w.createdServers()
				if errR != nil {
					assert.Equal(t, 1, n, "Release failed (%v) yet the instance was replaced", errR)
				} else {
					assert.Equal(t, 2, n, "Release succeeded: one replacement")
				}
				errD := w.m.Delete(dead, "cx")
				time.Sleep(3 * time.Hour)
				if errD != nil {
					assert.NotEmpty(t, w.m.Fleets(), "Delete failed (%v) yet the fleet went", errD)
				} else {
					assert.Empty(t, w.m.Fleets())
				}
				t.Log(fmt.Sprintf("apply: %v, release: %v, delete: %v", errA, errR, errD))
				w.waitGone(t, 3*time.Hour)
				w.stop()
				w.assertNoLeak(t)
				if t.Failed() {
					w.dumpEvents(t)
				}
			})
		})
	}
}
