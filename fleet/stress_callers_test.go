package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// t8Cloud is one of the two sims with what the stress test needs of it.
type t8Cloud struct {
	name        string
	createRoute string
	req         fleet.Requirements
}

var t8Clouds = []t8Cloud{
	{name: "vultr", createRoute: "POST /v2/instances", req: fleet.Requirements{
		Providers: []string{fleet.ProviderVultr}, InstanceTypes: []string{"vc2-1c-1gb"}, Regions: []string{"ewr"}}},
	{name: "hotaisle", createRoute: "POST /api/teams/{team}/virtual_machines/", req: fleet.Requirements{
		Providers: []string{fleet.ProviderHotAisle}, GPUModel: "MI300X", GPUCount: 1, BareMetal: fleet.No}},
}

// t8World is both fakes and a Manager driven by Run, built inside a bubble.
type t8World struct {
	v      *sim.Vultr
	h      *sim.HotAisle
	store  fleet.Store
	m      *fleet.Manager
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	events []fleet.Event
}

func t8Providers(v *sim.Vultr, h *sim.HotAisle) []fleet.Provider {
	return []fleet.Provider{
		vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client()))),
		hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client()))),
	}
}

func newT8World(t *testing.T, lag time.Duration, store fleet.Store, policy fleet.Policy) *t8World {
	t.Helper()
	w := &t8World{v: sim.NewVultr(sim.WithVisibilityLag(lag)), h: sim.NewHotAisle(sim.WithVisibilityLag(lag)), store: store}
	w.start(t, policy)
	return w
}

// start builds a Manager on w's fakes and store and runs it.
func (w *t8World) start(t *testing.T, policy fleet.Policy) {
	t.Helper()
	m, err := fleet.NewManager(fleet.Config{Providers: t8Providers(w.v, w.h), Policy: policy, Store: w.store,
		Owner: "t8", Interval: 10 * time.Second,
		OnEvent: func(e fleet.Event) { w.mu.Lock(); w.events = append(w.events, e); w.mu.Unlock() }})
	require.NoError(t, err)
	w.m = m
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go func() { defer close(w.done); _ = m.Run(ctx) }()
}

// stop closes the Manager and ends Run.
func (w *t8World) stop() {
	w.m.Close()
	w.cancel()
	<-w.done
}

func (w *t8World) resources() []sim.Resource { return append(w.v.Resources(), w.h.Resources()...) }

// liveServers lists the live instances, VMs and bare-metal servers of both fakes.
func (w *t8World) liveServers() []sim.Resource {
	var out []sim.Resource
	for _, r := range w.resources() {
		if r.Live() && r.Kind != "ssh_key" && r.Kind != "vpc" {
			out = append(out, r)
		}
	}
	return out
}

// createdServers counts every server the fakes ever created.
func (w *t8World) createdServers() int {
	n := 0
	for _, r := range w.resources() {
		if r.Kind != "ssh_key" && r.Kind != "vpc" {
			n++
		}
	}
	return n
}

// waitGone deletes every fleet and waits (bubble time) until none is left.
func (w *t8World) waitGone(t *testing.T, within time.Duration) {
	t.Helper()
	for _, s := range w.m.Fleets() {
		err := w.m.Delete(context.Background(), s.Name)
		if err != nil && !errors.Is(err, fleet.ErrNotFound) {
			t.Logf("delete %s: %v", s.Name, err)
		}
	}
	end := time.Now().Add(within)
	for len(w.m.Fleets()) > 0 && time.Now().Before(end) {
		time.Sleep(10 * time.Second)
	}
	assert.Empty(t, w.m.Fleets(), "fleets left after %v", within)
}

func (w *t8World) assertNoLeak(t *testing.T) {
	t.Helper()
	for _, r := range w.resources() {
		assert.False(t, r.Live(), "%s %s (%s, label %q %q) left behind", r.Kind, r.ID, r.Plan, r.Label, r.Description)
	}
	for _, c := range append(w.v.Ledger().Charges, w.h.Ledger().Charges...) {
		assert.False(t, c.Live, "charge of %s still live", c.ResourceID)
	}
}

// t8Book keeps what the callers did, to bound the creates the fleets explain.
type t8Book struct {
	mu       sync.Mutex
	nodes    map[string]int // fleet → Nodes last applied (0 after a delete)
	explains int            // creates the callers explain: size increases and releases
	held     map[string]int // instance id → goroutine holding it (Acquire)
	twice    []string
	// order serialises Apply and Delete so the book sees them in the
	// Manager's order; a channel, not a mutex: blocking on it is durable
	// in a synctest bubble (a mutex held across a call stops bubble time).
	order chan struct{}
}

func (b *t8Book) apply(ctx context.Context, m *fleet.Manager, s fleet.Spec) error {
	b.order <- struct{}{}
	defer func() { <-b.order }()
	err := m.Apply(ctx, s)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		if d := s.Nodes - b.nodes[s.Name]; d > 0 {
			b.explains += d
		}
		b.nodes[s.Name] = s.Nodes
	}
	return err
}

func (b *t8Book) delete(ctx context.Context, m *fleet.Manager, name string) error {
	b.order <- struct{}{}
	defer func() { <-b.order }()
	err := m.Delete(ctx, name)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		b.nodes[name] = 0
	}
	return err
}

// stressCallers runs n goroutines of random public calls for d (bubble time).
func stressCallers(t *testing.T, m *fleet.Manager, c t8Cloud, n int, d time.Duration, seed uint64) *t8Book {
	b := &t8Book{nodes: map[string]int{}, held: map[string]int{}, order: make(chan struct{}, 1)}
	fleets := []string{"f-a", "f-b"}
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			var mine []string
			for time.Now().Before(end) {
				time.Sleep(time.Duration(rng.IntN(300)) * time.Second)
				f := fleets[rng.IntN(len(fleets))]
				ctx := context.Background()
				switch op := rng.IntN(10); {
				case op < 3:
					pol := []fleet.ReleasePolicy{"", fleet.ReleaseNow, fleet.ReleaseAtReservationEnd}[rng.IntN(3)]
					_ = b.apply(ctx, m, fleet.Spec{Name: f, Nodes: rng.IntN(4), Requirements: c.req, ReleasePolicy: pol})
				case op == 3 && rng.IntN(3) == 0:
					_ = b.delete(ctx, m, f)
				case op < 6:
					inst, err := m.Acquire(ctx, f)
					if err != nil {
						continue
					}
					b.mu.Lock()
					if h, ok := b.held[inst.ID]; ok {
						b.twice = append(b.twice, fmt.Sprintf("%s held by %d, handed to %d", inst.ID, h, g))
					}
					b.held[inst.ID] = g
					b.mu.Unlock()
					mine = append(mine, inst.ID)
				case op < 8 && len(mine) > 0:
					id := mine[0]
					mine = mine[1:]
					b.mu.Lock()
					delete(b.held, id)
					b.mu.Unlock()
					_ = m.MarkIdle(id)
				case op == 8 && len(mine) > 0:
					id := mine[0]
					mine = mine[1:]
					b.mu.Lock()
					delete(b.held, id)
					b.mu.Unlock()
					if _, err := m.Release(ctx, id, fleet.WithReleasePolicy(fleet.ReleaseNow)); err == nil {
						b.mu.Lock()
						b.explains++
						b.mu.Unlock()
					}
				default:
					_ = m.Instances(f)
					_ = m.Records()
					_ = m.Fleets()
				}
			}
		}()
	}
	wg.Wait()
	return b
}

// TestConcurrentCallersWhileRun: 12 goroutines apply, delete,
// acquire, release and mark instances of two fleets at random moments for
// two hours while Run runs, on each sim, with slow creates (30 s to 4 min),
// 5xx after commit on a third of the creates and 90 s of visibility lag.
// Then every fleet is deleted: nothing may be left, no create may go
// beyond what the size changes and releases explain, and Acquire never
// hands one node to two callers.
func TestConcurrentCallersWhileRun(t *testing.T) {
	for _, c := range t8Clouds {
		for seed := uint64(1); seed <= t8Seeds; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", c.name, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					w := newT8World(t, 90*time.Second, fleet.NewMemoryStore(), fleet.Policy{})
					injectT8(t, w, c)
					b := stressCallers(t, w.m, c, 12, 2*time.Hour, seed)
					w.waitGone(t, 6*time.Hour)
					w.stop()
					w.assertNoLeak(t)
					if t.Failed() {
						w.dumpEvents(t)
					}
					assert.Empty(t, b.twice, "Acquire handed a node out twice")
					assert.LessOrEqual(t, w.createdServers(), b.explains,
						"creates beyond the size increases and releases the callers made")
				})
			})
		}
	}
}

func injectT8(t *testing.T, w *t8World, c t8Cloud) {
	t.Helper()
	slow := sim.Fault{Route: c.createRoute, Latency: 30 * time.Second, LatencyMax: 4 * time.Minute}
	after := sim.Fault{Route: c.createRoute, Probability: 0.33, Status: 500, AfterCommit: true}
	if c.name == "vultr" {
		require.NoError(t, w.v.Inject(slow))
		require.NoError(t, w.v.Inject(after))
		return
	}
	require.NoError(t, w.h.Inject(slow))
	require.NoError(t, w.h.Inject(after))
}

func (w *t8World) dumpEvents(t *testing.T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events {
		t.Log(e.String())
	}
}

// t8Seeds is how many seeds the concurrent-callers test runs per sim.
const t8Seeds = 6
