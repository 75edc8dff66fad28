package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replicaSet is several Managers sharing one LeaseStore, each with its own
// loop that the test can stop (a crash) or pause.
type replicaSet struct {
	e       *env
	store   fleet.LeaseStore
	ms      []*fleet.Manager
	cancels []context.CancelFunc
	dones   []chan error
}

func newReplicaSet(t *testing.T, e *env, store fleet.LeaseStore, n int) *replicaSet {
	rs := &replicaSet{e: e, store: store}
	for range n {
		rs.add(t, "rp", store, e.vp, e.hp)
	}
	return rs
}

// add starts one more replica (id r<index>, ReleaseNow) on store with
// providers, its events in e's log.
func (rs *replicaSet) add(t *testing.T, owner string, store fleet.LeaseStore, providers ...fleet.Provider) {
	e, i := rs.e, len(rs.ms)
	m, err := fleet.NewManager(fleet.Config{Providers: providers, Owner: owner, Store: store,
		ReplicaID: fmt.Sprintf("r%d", i), Policy: fleet.Policy{Release: fleet.ReleaseNow},
		OnEvent: func(ev fleet.Event) { e.mu.Lock(); e.events = append(e.events, ev); e.mu.Unlock() }})
	require.NoError(t, err)
	t.Cleanup(m.Close)
	rs.ms = append(rs.ms, m)
	rs.cancels = append(rs.cancels, nil)
	rs.dones = append(rs.dones, nil)
	rs.start(i)
}

func (rs *replicaSet) start(i int) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	m := rs.ms[i]
	go func() { defer close(done); _ = m.Run(ctx) }()
	rs.cancels[i], rs.dones[i] = cancel, done
}

// stop ends replica i's loop without Close: it stops renewing its leases,
// as a process that died (its calls under way still land).
func (rs *replicaSet) stop(i int) {
	rs.cancels[i]()
	<-rs.dones[i]
}

func (rs *replicaSet) stopAll() {
	for i := range rs.ms {
		rs.stop(i)
	}
}

// converged reports whether every fleet has its nodes idle, by the store.
func converged(t *testing.T, store fleet.Store, want map[string]int) bool {
	recs, err := store.Instances(t.Context())
	require.NoError(t, err)
	idle := map[string]int{}
	for _, r := range recs {
		if r.Instance.Status == fleet.StatusIdle && r.Termination == nil {
			idle[r.Instance.Fleet]++
		}
	}
	for name, n := range want {
		if idle[name] != n {
			return false
		}
	}
	return true
}

// Three replicas reconcile 20 fleets on both sims; one dies mid-way and
// another is paused past its lease, then resumes. Every fleet converges,
// no create is made twice, and nothing is left after the deletes.
func TestReplicasTakeOverWithoutDoubleCreatesOrLeaks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.hot.SetVMLimit(100)
		require.NoError(t, e.hot.SetQuantity("vm-mi300x-1", 100))
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 3)
		want := map[string]int{}
		for i := range 20 {
			name := fmt.Sprintf("f%02d", i)
			req := vultrVM("ewr")
			if i%2 == 1 {
				req = hotType("vm-mi300x-1")
			}
			want[name] = 1 + i%2
			require.NoError(t, rs.ms[i%3].Apply(t.Context(), spec(name, want[name], req)))
		}
		time.Sleep(90 * time.Second)
		rs.stop(1) // dies mid-way: its leases run out
		time.Sleep(time.Minute)
		rs.stop(2) // paused past its lease...
		time.Sleep(2 * time.Minute)
		rs.start(2) // ...and resumed
		for deadline := time.Now().Add(time.Hour); !converged(t, store, want); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		assert.Positive(t, e.count(fleet.EventFleetTaken))
		for name := range want {
			require.NoError(t, rs.ms[0].Delete(t.Context(), name))
		}
		for deadline := time.Now().Add(3 * time.Hour); len(rs.ms[0].Fleets()) > 0; time.Sleep(time.Minute) {
			require.True(t, time.Now().Before(deadline), "not deleted: %v", rs.ms[0].Fleets())
		}
		time.Sleep(time.Hour)
		rs.stopAll()
		e.assertNothingLeft()
		seen := map[string]string{}
		for _, r := range append(e.vultr.Resources(), e.hot.Resources()...) {
			l, ok := fleet.ParseLabel(r.Label + r.Description)
			if !ok || r.Kind == "ssh_key" || r.Kind == "vpc" {
				continue
			}
			assert.Empty(t, seen[l.RequestID], "request %s created twice (%s and %s)", l.RequestID, seen[l.RequestID], r.ID)
			seen[l.RequestID] = r.ID
		}
		total := 0
		for _, n := range want {
			total += n
		}
		assert.Len(t, seen, total, "one server per node: nothing created twice, nothing replaced")
	})
}

// Fleets sharing one SSH key are deleted through different replicas: once
// no stored fleet needs the key, the collector replica lists the keys again
// and removes it, though no create of its own asks for a listing.
func TestReplicasRemoveASharedSSHKeyOnceNoStoredFleetNeedsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.hot.SetVMLimit(20)
		require.NoError(t, e.hot.SetQuantity("vm-mi300x-1", 20))
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 3)
		key := newKeyLine(t, "shared@ci")
		want := map[string]int{}
		for i := range 6 {
			s := spec(fmt.Sprintf("k%d", i), 1, hotType("vm-mi300x-1"))
			s.SSHKeys, want[s.Name] = []string{key}, 1
			require.NoError(t, rs.ms[i%3].Apply(t.Context(), s))
		}
		for deadline := time.Now().Add(time.Hour); !converged(t, store, want); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		require.Equal(t, 1, live(e.hot.Resources(), "ssh_key"), "registered once for the six fleets")
		for i := range 6 {
			require.NoError(t, rs.ms[i%3].Delete(t.Context(), fmt.Sprintf("k%d", i)))
		}
		for deadline := time.Now().Add(3 * time.Hour); ; time.Sleep(time.Minute) {
			fleets, err := store.Fleets(t.Context())
			require.NoError(t, err)
			if len(fleets) == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "not deleted: %d fleets stored", len(fleets))
		}
		time.Sleep(5 * time.Minute) // ten lease syncs
		rs.stopAll()
		e.assertNothingLeft()
		assert.Zero(t, live(e.hot.Resources(), "ssh_key"), "the shared key is removed")
	})
}

// A replica forgets the lease of a fleet that left the store without
// saying that it lost it: no FleetReleased follows FleetDeleted.
func TestReplicasForgetDeletedFleetsQuietly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := fleet.NewMemoryLeaseStore(nil)
		rs := newReplicaSet(t, e, store, 2)
		want := map[string]int{"a": 1, "b": 1, "c": 1}
		for name := range want {
			require.NoError(t, rs.ms[0].Apply(t.Context(), spec(name, 1, vultrVM("ewr"))))
		}
		for deadline := time.Now().Add(time.Hour); !converged(t, store, want); time.Sleep(30 * time.Second) {
			require.True(t, time.Now().Before(deadline), "not converged")
		}
		released := e.count(fleet.EventFleetReleased) // handovers while the replicas registered
		for name := range want {
			require.NoError(t, rs.ms[1].Delete(t.Context(), name))
		}
		for deadline := time.Now().Add(3 * time.Hour); e.count(fleet.EventFleetDeleted) < len(want); time.Sleep(time.Minute) {
			require.True(t, time.Now().Before(deadline), "not deleted")
		}
		time.Sleep(5 * time.Minute) // ten lease syncs, five lease lifetimes
		rs.stopAll()
		for _, ev := range e.eventsOf(fleet.EventFleetReleased)[released:] {
			t.Errorf("after the deletes: %s", ev)
		}
	})
}
