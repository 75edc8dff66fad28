package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
)

// world is one fault schedule's cloud and process history: both fakes, the
// faults of the provider wrappers (shared by every generation, as they are
// the cloud's), the Store, and the Manager generations (one per crash).
// Build it inside a synctest bubble.
type world struct {
	t     *testing.T
	sch   *schedule
	start time.Time
	vultr *sim.Vultr
	hot   *sim.HotAisle

	mu       sync.Mutex
	rng      *rand.Rand           // latency and hiding draws
	slowTill time.Time            // provider calls answer slowly until then
	slowMax  time.Duration        // at most this slowly
	hideTill time.Time            // instances created until then are hidden for a while
	hideMax  time.Duration        // for at most this long
	hidden   map[string]time.Time // provider/id → out of List and Get until
	fleetOf  map[string]string    // provider/id → fleet, from create answers
	extra    map[string]int       // fleet → creates explained by crashes
	log      []string             // what happened at run time, for the report
	events   []genEvent
	emptyAt  []time.Time // restarts with an empty Store
	armed    *armedCrash
	restart  *crashPlan      // a crash happened: restart with this plan at the next tick
	foreign  map[string]bool // ids of other owners' resources, planted
	model    *model

	base    fleet.Store // the store the next generation reads
	gen     *generation
	gens    []*generation
	toClose []*generation // crashed; closed once the next generation has worked
	closing sync.WaitGroup
}

// generation is one process: its providers, its Manager and its view of the Store.
type generation struct {
	n      int
	m      *fleet.Manager
	store  *crashStore
	ctx    context.Context
	cancel context.CancelFunc
	dead   atomic.Bool
	runEnd chan struct{} // Run mode: closed when Run returned
}

type genEvent struct {
	gen int
	ev  fleet.Event
}

type armedCrash struct {
	gen   *generation
	plan  crashPlan
	until time.Time // then it fires by timer: every planned crash happens
}

// armedFor is how long an armed crash waits for its event or call.
const armedFor = 10 * time.Minute

func newWorld(t *testing.T, sch *schedule) *world {
	w := &world{t: t, sch: sch, start: time.Now(), rng: rand.New(rand.NewPCG(sch.seed, 7)),
		hidden: map[string]time.Time{}, fleetOf: map[string]string{}, extra: map[string]int{}, foreign: map[string]bool{},
		base: fleet.NewMemoryStore(), model: newModel()}
	w.vultr = sim.NewVultr(sim.WithSeed(sch.seed))
	w.hot = sim.NewHotAisle(sim.WithSeed(sch.seed))
	return w
}

func (w *world) logf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.logLocked(format, args...)
}

func (w *world) logLocked(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf("%8s  ", time.Since(w.start).Round(time.Second))+fmt.Sprintf(format, args...))
}

// seedForeign plants resources of another owner and an unlabelled VPC:
// they must be left alone.
func (w *world) seedForeign() {
	id, err := w.vultr.SeedServer(sim.VultrSeed{Plan: vm, Region: "ewr", Age: time.Hour,
		Label: fleet.Label{Owner: "zz", Fleet: "theirs", RequestID: "0123456789ab"}.String()})
	if err != nil {
		w.t.Fatal(err)
	}
	w.foreign[id] = true
	vpc, err := w.vultr.SeedVPC("ewr", "somebody else's VPC")
	if err != nil {
		w.t.Fatal(err)
	}
	w.foreign[vpc] = true
}

// startGen starts a new process over w.base.
func (w *world) startGen() *generation {
	g := &generation{n: len(w.gens) + 1, store: &crashStore{Store: w.base}}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	vc := vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(w.vultr.Client()))
	hc := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(w.hot.Client()))
	vp := &wrappedVPC{wrapped: wrapped{p: vultr.NewProvider(vc), w: w, g: g}}
	vp.vp = vp.p.(fleet.VPCProvider)
	hp := &wrappedKeys{wrapped: wrapped{p: hotaisle.NewProvider(hc, hotaisle.WithBareMetal(true)), w: w, g: g}}
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{vp, hp}, Owner: testOwner, Store: g.store,
		Interval: w.sch.interval, Policy: schedulePolicy(), OnEvent: func(ev fleet.Event) { w.onEvent(g, ev) }})
	if err != nil {
		w.t.Fatalf("generation %d: %v", g.n, err)
	}
	g.m = m
	if w.sch.runLoop {
		g.runEnd = make(chan struct{})
		go func() {
			defer close(g.runEnd)
			if err := m.Run(g.ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, fleet.ErrClosed) {
				w.logf("gen %d: Run: %v", g.n, err)
			}
		}()
	}
	w.mu.Lock()
	w.gen = g
	w.gens = append(w.gens, g)
	w.mu.Unlock()
	return g
}

func (w *world) onEvent(g *generation, ev fleet.Event) {
	w.mu.Lock()
	w.events = append(w.events, genEvent{gen: g.n, ev: ev})
	a := w.armed
	w.mu.Unlock()
	if a != nil && a.gen == g && a.plan.Trigger == "event" && a.plan.Event == ev.Type {
		w.crash(g, a.plan, "inside OnEvent("+string(ev.Type)+")")
	}
}

// crash abandons generation g: its Store writes are lost from now on, its
// loop stops; its calls under way go on and may still land. The driver
// starts the next generation at its next tick.
func (w *world) crash(g *generation, plan crashPlan, why string) {
	if !g.dead.CompareAndSwap(false, true) {
		return
	}
	g.store.dead.Store(true)
	g.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = nil
	w.restart = &plan
	w.logLocked("gen %d crashed %s", g.n, why)
}

// arm sets up a crash of the current generation.
func (w *world) arm(p crashPlan) {
	if p.Trigger == "timer" {
		w.crash(w.gen, p, "by timer")
		return
	}
	w.mu.Lock()
	w.armed = &armedCrash{gen: w.gen, plan: p, until: time.Now().Add(armedFor)}
	w.mu.Unlock()
}

// callCrash fires an armed crash on a provider call of g.
func (w *world) callCrash(g *generation, method string, after bool) {
	w.mu.Lock()
	a := w.armed
	w.mu.Unlock()
	if a != nil && a.gen == g && a.plan.Trigger == "call" && a.plan.Method == method && a.plan.AfterCall == after {
		when := "before"
		if after {
			when = "after"
		}
		w.crash(g, a.plan, fmt.Sprintf("%s a %s call", when, method))
	}
}

// tick is one turn of the driver: restart after a crash, close crashed
// generations once the next one has worked, and (Reconcile mode) one pass.
func (w *world) tick() {
	w.mu.Lock()
	late := w.armed
	w.mu.Unlock()
	if late != nil && !time.Now().Before(late.until) {
		w.crash(late.gen, late.plan, "by timer (its trigger did not come)")
	}
	w.mu.Lock()
	plan := w.restart
	w.restart = nil
	w.mu.Unlock()
	if plan != nil {
		w.restartAfterCrash(*plan)
		if !w.sch.runLoop {
			w.reconcile()
		}
		return // Run mode: the old generations close at the next tick
	}
	w.closeCrashed()
	if !w.sch.runLoop {
		w.reconcile()
	}
}

func (w *world) reconcile() {
	g := w.gen
	if err := g.m.Reconcile(g.ctx); err != nil && !g.dead.Load() {
		w.logf("gen %d: Reconcile: %v", g.n, err)
	}
}

// closeCrashed closes the crashed generations in the background: their
// calls under way end (or land) while the new generation works.
func (w *world) closeCrashed() {
	for _, g := range w.toClose {
		w.closing.Go(func() {
			g.m.Close()
			if g.runEnd != nil {
				<-g.runEnd
			}
		})
	}
	w.toClose = nil
}

// restartAfterCrash starts the next generation with the same Store or an
// empty one, and tells it the desired state again when the plan says so.
func (w *world) restartAfterCrash(p crashPlan) {
	old := w.gen
	w.toClose = append(w.toClose, old)
	if p.EmptyStore {
		w.emptyAt = append(w.emptyAt, time.Now())
		w.base = fleet.NewMemoryStore()
		w.mu.Lock()
		now := time.Now()
		for key, until := range w.hidden {
			if now.Before(until) {
				w.extra[w.fleetOf[key]]++ // a fresh process cannot know a server no list shows
			}
		}
		w.mu.Unlock()
	}
	g := w.startGen()
	w.logf("gen %d started (%s store, desired state %s)", g.n, map[bool]string{true: "empty", false: "same"}[p.EmptyStore],
		map[bool]string{true: "applied again", false: "not applied again"}[p.Reapply])
	if p.Reapply {
		w.model.reapply(w, g)
	} else if p.EmptyStore {
		w.model.forget()
	}
}

// stopAll ends every generation and waits for their goroutines.
func (w *world) stopAll() {
	w.closeCrashed()
	w.gen.cancel()
	w.gen.m.Close()
	if w.gen.runEnd != nil {
		<-w.gen.runEnd
	}
	w.closing.Wait()
}

// runUntil drives the Manager until end: Reconcile every 10 s, or Run in
// its goroutine while the driver only restarts and closes generations.
func (w *world) runUntil(end time.Time) {
	for time.Now().Before(end) {
		w.tick()
		if d := min(10*time.Second, time.Until(end)); d > 0 {
			time.Sleep(d)
		}
	}
}

// eventCounts counts the events of every generation by fleet and type.
func (w *world) eventCounts() map[string]map[fleet.EventType]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]map[fleet.EventType]int{}
	for _, e := range w.events {
		if out[e.ev.Fleet] == nil {
			out[e.ev.Fleet] = map[fleet.EventType]int{}
		}
		typ := e.ev.Type
		if typ == fleet.EventReleaseRequested && e.ev.Message == "idle" {
			typ = "ReleaseRequested(idle)"
		}
		out[e.ev.Fleet][typ]++
	}
	return out
}

// eventLog is every event of every generation, one per line.
func (w *world) eventLog() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, e := range w.events {
		fmt.Fprintf(&b, "  gen %d %8s %s\n", e.gen, e.ev.Time.Sub(w.start).Round(time.Second), e.ev)
	}
	return b.String()
}
