package pgstore_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gateProvider makes the create call on the cloud, then holds the answer
// until open is closed or the call's context ends. With lose set, the
// answer is an error (the server exists, the caller never learns its id).
type gateProvider struct {
	fleet.Provider
	armed   atomic.Bool
	lose    bool
	created chan struct{} // receives one value per created server held
	open    chan struct{}
	creates atomic.Int64
}

func newGate(p fleet.Provider, lose bool) *gateProvider {
	g := &gateProvider{Provider: p, lose: lose, created: make(chan struct{}, 16), open: make(chan struct{})}
	g.armed.Store(true)
	return g
}

func (g *gateProvider) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	g.creates.Add(1)
	inst, err := g.Provider.Create(ctx, req)
	if err != nil || !g.armed.Load() {
		return inst, err
	}
	g.created <- struct{}{}
	select {
	case <-g.open:
	case <-ctx.Done():
		return fleet.Instance{}, ctx.Err()
	}
	if g.lose {
		return fleet.Instance{}, context.DeadlineExceeded
	}
	return inst, nil
}

// pickInstance is the replicas' rendezvous choice (the same hash as the Manager's).
func pickInstance(key string, holders []string) string {
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

// fleetFor returns a fleet name that falls to holder among holders.
func fleetFor(holder string, holders []string) string {
	for i := 0; ; i++ {
		if n := fmt.Sprintf("g%d", i); pickInstance(n, holders) == holder {
			return n
		}
	}
}

type replicaUnderTest struct {
	m *fleet.Manager
	s *pgstore.Store
	c *cutStore
}

// cutStore refuses lease renewals and acquisitions once cut (the replica
// can no longer reach its lease rows); every other call goes through.
type cutStore struct {
	*pgstore.Store
	cut atomic.Bool
}

func (c *cutStore) RenewLease(ctx context.Context, l fleet.Lease) (fleet.Lease, error) {
	if c.cut.Load() {
		return fleet.Lease{}, fleet.ErrLeaseLost
	}
	return c.Store.RenewLease(ctx, l)
}

func (c *cutStore) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (fleet.Lease, error) {
	if c.cut.Load() {
		return fleet.Lease{}, fleet.ErrLeaseLost
	}
	return c.Store.AcquireLease(ctx, name, holder, ttl)
}

func startReplica(t *testing.T, w *world, dsn, schema, id string, p fleet.Provider) replicaUnderTest {
	t.Helper()
	s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	c := &cutStore{Store: s}
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{p}, Clock: w.clock, Store: c, Owner: "tst",
		ReplicaID: id, Policy: fleet.Policy{Release: fleet.ReleaseNow, LeaseTTL: time.Second}})
	require.NoError(t, err)
	t.Cleanup(m.Close)
	return replicaUnderTest{m, s, c}
}

// liveVultr counts live Vultr servers in the fake.
func liveVultr(w *world) (live, ever int) {
	for _, r := range w.v.Resources() {
		if r.Kind == "instance" {
			ever++
			if r.Live() {
				live++
			}
		}
	}
	return
}

// until reconciles ms (real sleeps: leases run on the database's clock)
// until done or the deadline.
func until(t *testing.T, w *world, d time.Duration, done func() bool, ms ...*fleet.Manager) bool {
	t.Helper()
	for start := time.Now(); time.Since(start) < d; {
		for _, m := range ms {
			_ = m.Reconcile(context.Background())
		}
		if done() {
			return true
		}
		w.clock.Advance(10 * time.Second)
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func holdsLease(t *testing.T, s *pgstore.Store, fleetName, holder string) bool {
	ls, err := s.Leases(t.Context())
	require.NoError(t, err)
	for _, l := range ls {
		if l.Name == fleet.FleetLease(fleetName) {
			return l.Holder == holder
		}
	}
	return false
}

// The replica holding a fleet is closed (or its Run cancelled) while a
// create it made is on the cloud but its answer is not yet back: the other
// replica takes the fleet and must find the server by its label, not
// create a second one.
func TestReplicaStopsBetweenCreateAndWrite(t *testing.T) {
	for _, how := range []string{"close", "cancel-run", "close-answer-lost"} {
		t.Run(how, func(t *testing.T) {
			dsn := pgtest.DSN(t)
			schema := pgtest.Schema(t, dsn)
			w := newWorld(t, 10)
			gate := newGate(w.providers[0], how == "close-answer-lost")
			a := startReplica(t, w, dsn, schema, "a", gate)
			require.NoError(t, a.m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: 1, Requirements: vultrVMs()}))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				if how == "cancel-run" {
					_ = a.m.Run(ctx)
					return
				}
				for ctx.Err() == nil && a.m.Reconcile(ctx) == nil {
					w.clock.Advance(10 * time.Second)
				}
			}()
			select {
			case <-gate.created:
			case <-time.After(20 * time.Second):
				t.Fatal("no create")
			}
			switch how {
			case "cancel-run":
				cancel()
				<-done
				close(gate.open) // the answer comes back to nobody
			default:
				go func() { time.Sleep(100 * time.Millisecond); cancel() }()
				a.m.Close()
				<-done
			}
			b := startReplica(t, w, dsn, schema, "b", w.providers[0])
			ok := until(t, w, 15*time.Second, func() bool {
				insts := b.m.Instances("f")
				return len(insts) == 1 && insts[0].Status == fleet.StatusIdle
			}, b.m)
			live, ever := liveVultr(w)
			assert.True(t, ok, "b never settled the fleet: %+v", b.m.Instances("f"))
			assert.Equal(t, 1, ever, "servers ever created (want 1: the one a made, found by label)")
			assert.Equal(t, 1, live)
			require.NoError(t, b.m.Delete(t.Context(), "f"))
			until(t, w, 15*time.Second, func() bool { l, _ := liveVultr(w); return l == 0 && len(b.m.Fleets()) == 0 }, b.m)
			live, _ = liveVultr(w)
			assert.Zero(t, live, "leak after Delete")
		})
	}
}

// Delete on a replica that does not hold the fleet while the holder is
// mid-create: the create that lands is released, nothing is left, and no
// further create starts.
func TestDeleteOnOtherReplicaMidCreate(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	w := newWorld(t, 10)
	gate := newGate(w.providers[0], false)
	a := startReplica(t, w, dsn, schema, "a", gate)
	b := startReplica(t, w, dsn, schema, "b", w.providers[0])
	name := fleetFor("a", []string{"a", "b"})
	// both alive before the fleet exists, so the lease falls to a by rendezvous
	require.True(t, until(t, w, 5*time.Second, func() bool {
		ls, _ := a.s.Leases(t.Context())
		return len(ls) >= 2
	}, a.m, b.m))
	require.NoError(t, b.m.Apply(t.Context(), fleet.Spec{Name: name, Nodes: 3, Requirements: vultrVMs()}))
	var wg sync.WaitGroup
	wg.Add(1)
	stop := make(chan struct{})
	go func() { // a's loop
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = a.m.Reconcile(context.Background())
			time.Sleep(20 * time.Millisecond)
		}
	}()
	go func() { // b's loop (it must not take the fleet)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = b.m.Reconcile(context.Background())
			time.Sleep(20 * time.Millisecond)
		}
	}()
	select {
	case <-gate.created:
	case <-time.After(20 * time.Second):
		t.Fatal("no create")
	}
	assert.True(t, holdsLease(t, a.s, name, "a"), "a holds the fleet while its create is under way")
	require.NoError(t, b.m.Delete(t.Context(), name))
	time.Sleep(500 * time.Millisecond)
	gate.armed.Store(false)
	close(gate.open)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		live, _ := liveVultr(w)
		if live == 0 && len(a.m.Fleets()) == 0 && len(b.m.Fleets()) == 0 {
			break
		}
		w.clock.Advance(10 * time.Second)
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	live, ever := liveVultr(w)
	assert.Zero(t, live, "leak after Delete on the other replica")
	assert.LessOrEqual(t, ever, 3, "no create beyond the spec (creates: %d)", gate.creates.Load())
	assert.LessOrEqual(t, gate.creates.Load(), int64(3), "creates after Delete")
	assert.Empty(t, a.m.Fleets())
	assert.Empty(t, b.m.Fleets())
}

// Release on a replica that does not hold the fleet, by provider id and
// by request id: the holder releases it (and replaces it, the fleet
// still wanting the node); the time returned is the one the policy gives.
func TestReleaseOnNonHolder(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	w := newWorld(t, 10)
	a := startReplica(t, w, dsn, schema, "a", w.providers[0])
	b := startReplica(t, w, dsn, schema, "b", w.providers[0])
	name := fleetFor("a", []string{"a", "b"})
	require.True(t, until(t, w, 5*time.Second, func() bool {
		ls, _ := a.s.Leases(t.Context())
		return len(ls) >= 2
	}, a.m, b.m))
	require.NoError(t, a.m.Apply(t.Context(), fleet.Spec{Name: name, Nodes: 2, Requirements: vultrVMs()}))
	require.True(t, until(t, w, 15*time.Second, func() bool { return idleMembers(a.m, name, 2) }, a.m, b.m))
	assert.Empty(t, b.m.Instances(name), "b does not hold the fleet")
	insts := a.m.Instances(name)
	_, err := b.m.Release(t.Context(), insts[0].ID)
	require.NoError(t, err, "release by provider id on the non-holder")
	_, err = b.m.Release(t.Context(), insts[1].RequestID)
	require.NoError(t, err, "release by request id on the non-holder")
	ok := until(t, w, 20*time.Second, func() bool {
		gone := 0
		for _, r := range w.v.Resources() {
			if r.Kind == "instance" && !r.Live() {
				gone++
			}
		}
		return gone == 2 && idleMembers(a.m, name, 2)
	}, a.m, b.m)
	live, ever := liveVultr(w)
	assert.True(t, ok, "both released and replaced: live %d ever %d; a holds %v; a sees %+v; b sees %+v", live, ever,
		holdsLease(t, a.s, name, "a"), a.m.Instances(name), b.m.Instances(name))
	assert.Equal(t, 2, live)
	assert.Equal(t, 4, ever)

	// Under ReleaseAtReservationEnd the holder waits for the window; the
	// time the non-holder returns must say so, as Release's doc promises.
	require.NoError(t, a.m.Apply(t.Context(), fleet.Spec{Name: name, Nodes: 2, Requirements: vultrVMs(), ReleasePolicy: fleet.ReleaseAtReservationEnd}))
	require.True(t, until(t, w, 5*time.Second, func() bool { return idleMembers(a.m, name, 2) }, a.m, b.m))
	var id string
	for _, i := range a.m.Instances(name) {
		if i.Status == fleet.StatusIdle {
			id = i.ID
		}
	}
	atA, err := a.m.Release(t.Context(), id)
	require.NoError(t, err)
	atB, err := b.m.Release(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, atA, atB, "the holder says %v, the non-holder %v (now is %v)", atA, atB, w.clock.Now())
}

// The holder loses its lease while its create is under way (paused past
// the TTL); the other replica takes the fleet and settles it. When the
// old holder's answer comes back its write is refused (fenced) and it must
// not create again: one server in all.
func TestLeaseLostMidCreate(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	w := newWorld(t, 10)
	gate := newGate(w.providers[0], false)
	a := startReplica(t, w, dsn, schema, "a", gate)
	require.NoError(t, a.m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: 1, Requirements: vultrVMs()}))
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		_ = a.m.Reconcile(context.Background()) // blocks on the held create
	}()
	select {
	case <-gate.created:
	case <-time.After(20 * time.Second):
		t.Fatal("no create")
	}
	a.c.cut.Store(true) // a can no longer renew: its leases run out
	b := startReplica(t, w, dsn, schema, "b", w.providers[0])
	settled := until(t, w, 15*time.Second, func() bool {
		return holdsLease(t, b.s, "f", "b") && all(b.m, "f", 1, fleet.StatusIdle)
	}, b.m)
	assert.True(t, settled, "b took the fleet and settled it while a's create was held")
	close(gate.open)
	<-aDone
	until(t, w, 5*time.Second, func() bool { return false }, a.m, b.m)
	live, ever := liveVultr(w)
	assert.Equal(t, 1, ever, "servers ever created: one, whoever holds the fleet")
	assert.Equal(t, 1, live)
	require.NoError(t, b.m.Delete(t.Context(), "f"))
	until(t, w, 15*time.Second, func() bool { l, _ := liveVultr(w); return l == 0 }, a.m, b.m)
	live, _ = liveVultr(w)
	assert.Zero(t, live, "leak after Delete")
}

// idleMembers reports whether fleet has n idle instances (terminated ones aside).
func idleMembers(m *fleet.Manager, fleetName string, n int) bool {
	k := 0
	for _, i := range m.Instances(fleetName) {
		switch i.Status {
		case fleet.StatusTerminated:
		case fleet.StatusIdle:
			k++
		default:
			return false
		}
	}
	return k == n
}
