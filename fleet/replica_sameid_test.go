package fleet_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// createdRequests counts the distinct create requests (by label) the
// fakes ever saw for servers, and reports any request created twice.
func createdRequests(t *testing.T, e *env) int {
	t.Helper()
	seen := map[string]string{}
	for _, r := range append(e.vultr.Resources(), e.hot.Resources()...) {
		l, ok := fleet.ParseLabel(r.Label + r.Description)
		if !ok || r.Kind == "ssh_key" || r.Kind == "vpc" {
			continue
		}
		assert.Empty(t, seen[l.RequestID], "request %s created twice (%s and %s)", l.RequestID, seen[l.RequestID], r.ID)
		seen[l.RequestID] = r.ID
	}
	return len(seen)
}

// runningReplica is a Manager replica whose Run the test watches.
type runningReplica struct {
	m      *fleet.Manager
	cancel context.CancelFunc
	done   chan error // Run's error, once it returned
	events *[]fleet.Event
}

// startReplica makes a replica with id on store and runs it.
func startReplica(t *testing.T, e *env, store fleet.LeaseStore, id string) *runningReplica {
	t.Helper()
	rr := &runningReplica{done: make(chan error, 1), events: &[]fleet.Event{}}
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: "rp", Store: store,
		ReplicaID: id, Policy: fleet.Policy{Release: fleet.ReleaseNow},
		OnEvent: func(ev fleet.Event) {
			e.mu.Lock()
			e.events = append(e.events, ev)
			*rr.events = append(*rr.events, ev)
			e.mu.Unlock()
		}})
	require.NoError(t, err)
	t.Cleanup(m.Close)
	rr.m = m
	rr.resume()
	return rr
}

// resume runs the replica's loop again.
func (rr *runningReplica) resume() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rr.m.Run(ctx) }()
	rr.cancel, rr.done = cancel, done
}

// stop ends the loop (a crash: no Close, the leases stay until they
// expire) and returns Run's error unless it was the cancellation.
func (rr *runningReplica) stop() error {
	rr.cancel()
	if err := <-rr.done; !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// ended returns Run's error once it returned on its own (nil while it runs).
func (rr *runningReplica) ended() error {
	select {
	case err := <-rr.done:
		rr.done <- err
		return err
	default:
		return nil
	}
}

// Two replicas started with the same ReplicaID by mistake (a copied
// config, a host name shared by two containers). The second is refused its
// replica lease, takes no fleet, and its Run returns a
// *ReplicaIDInUseError once it sees the first one renew the lease: a fleet
// of 2 nodes gets exactly 2 servers, nothing is created twice.
func TestTwoReplicasWithTheSameID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := []*runningReplica{startReplica(t, e, store, "same"), startReplica(t, e, store, "same")}
		require.NoError(t, rs[0].m.Apply(t.Context(), spec("same", 2, vultrVM("ewr"))))
		require.NoError(t, rs[1].m.Apply(t.Context(), spec("sameh", 1, hotType("vm-mi300x-1"))), "recorded, carried out by the other")
		time.Sleep(time.Minute)
		var ended []int
		for i, r := range rs {
			if err := r.ended(); err != nil {
				ended = append(ended, i)
				require.ErrorIs(t, err, fleet.ErrReplicaIDInUse)
				require.ErrorIs(t, err, fleet.ErrLeaseHeld)
				var inUse *fleet.ReplicaIDInUseError
				require.ErrorAs(t, err, &inUse)
				assert.Equal(t, "same", inUse.ReplicaID)
				var held *fleet.LeaseHeldError
				require.ErrorAs(t, err, &held)
				assert.Equal(t, "replica/same", held.Name)
				assert.Contains(t, err.Error(), `replica id "same"`)
				assert.NotEmpty(t, *r.events, "reported")
				assert.Equal(t, fleet.EventReplicaIDInUse, (*r.events)[0].Type)
			}
		}
		require.Len(t, ended, 1, "exactly one of the two stands down")
		live := rs[1-ended[0]]
		time.Sleep(2 * time.Hour)
		assert.True(t, converged(t, store, map[string]int{"same": 2, "sameh": 1}), "converged")
		require.NoError(t, live.m.Delete(t.Context(), "same"))
		require.NoError(t, live.m.Delete(t.Context(), "sameh"))
		time.Sleep(3 * time.Hour)
		require.NoError(t, live.stop())
		e.assertNothingLeft()
		assert.Equal(t, 3, createdRequests(t, e), "one server per node: nothing created twice, nothing replaced")
	})
}

// A replica that crashed is restarted at once with its id: the new process
// waits until the dead one's lease runs out, then takes its share of the
// fleets again; its Run does not end.
func TestReplicaRestartedWithItsIDComesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		a, b := startReplica(t, e, store, "ra"), startReplica(t, e, store, "rb")
		want := map[string]int{}
		for _, name := range []string{"f1", "f2", "f3", "f4", "f5", "f6"} {
			require.NoError(t, a.m.Apply(t.Context(), spec(name, 1, vultrVM("ewr"))))
			want[name] = 1
		}
		for deadline := time.Now().Add(time.Hour); !converged(t, store, want); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		require.NoError(t, a.stop()) // crash
		a2 := startReplica(t, e, store, "ra")
		time.Sleep(5 * time.Minute)
		require.NoError(t, a2.ended(), "the restarted replica carries on")
		taken, waited := 0, false
		for _, ev := range *a2.events {
			switch ev.Type {
			case fleet.EventFleetTaken:
				taken++
			case fleet.EventReplicaIDInUse:
				waited = taken == 0
			}
		}
		assert.True(t, waited, "it waited for the dead one's lease to run out, and said so")
		assert.Positive(t, taken, "the restarted replica took fleets again")
		assert.True(t, converged(t, store, want), "still converged")
		for name := range want {
			require.NoError(t, a2.m.Delete(t.Context(), name))
		}
		time.Sleep(3 * time.Hour)
		require.NoError(t, a2.stop())
		require.NoError(t, b.stop())
		e.assertNothingLeft()
		assert.Equal(t, 6, createdRequests(t, e), "nothing created twice")
	})
}

// A replica paused past its lease (a stopped VM, a long GC) while a second
// process with its id takes the id over: when the first resumes it finds
// the lease renewed by the other, drops its fleets and its Run returns a
// *ReplicaIDInUseError; the fleets stay at their size. Once the other is
// stopped, Run called again takes the fleets back.
func TestPausedReplicaFindsItsIDTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		a := startReplica(t, e, store, "px")
		require.NoError(t, a.m.Apply(t.Context(), spec("p1", 2, vultrVM("ewr"))))
		for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"p1": 2}); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		require.NoError(t, a.stop()) // paused
		b := startReplica(t, e, store, "px")
		time.Sleep(5 * time.Minute)
		require.NoError(t, b.ended())
		a.resume()
		time.Sleep(5 * time.Minute)
		err := a.ended()
		require.ErrorIs(t, err, fleet.ErrReplicaIDInUse, "the resumed one stands down")
		require.NoError(t, b.ended(), "the other carries on")
		assert.Empty(t, a.m.Instances("p1"), "the resumed one dropped its fleets")
		require.NoError(t, b.m.Apply(t.Context(), spec("p1", 3, vultrVM("ewr"))))
		time.Sleep(time.Hour)
		assert.True(t, converged(t, store, map[string]int{"p1": 3}))
		require.NoError(t, b.stop()) // the way out: stop the other, run this one again
		a.resume()
		time.Sleep(5 * time.Minute)
		require.NoError(t, a.ended(), "Run again: it waited for the lease and carries on")
		assert.Len(t, a.m.Instances("p1"), 3, "it took the fleet again")
		require.NoError(t, a.m.Delete(t.Context(), "p1"))
		time.Sleep(3 * time.Hour)
		require.NoError(t, a.stop())
		e.assertNothingLeft()
		assert.Equal(t, 3, createdRequests(t, e), "nothing created twice")
	})
}
