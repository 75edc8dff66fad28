package fleet_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// env is one scenario's world: both fakes, their providers, a Manager and
// the events it emitted. Build it inside a synctest bubble.
type env struct {
	t       *testing.T
	vultr   *sim.Vultr
	hot     *sim.HotAisle
	vp      *vultr.Provider
	hp      *hotaisle.Provider
	m       *fleet.Manager
	store   fleet.Store
	policy  fleet.Policy
	mu      sync.Mutex
	events  []fleet.Event
	vultrCl *vultr.Client
	// onEvent, if set (under mu), is called with each event after it is
	// logged, from the Manager's delivery (m.mu not held).
	onEvent func(fleet.Event)
}

func newEnv(t *testing.T, policy fleet.Policy, simOpts ...sim.Option) *env {
	t.Helper()
	e := &env{t: t, policy: policy, store: fleet.NewMemoryStore()}
	e.vultr = sim.NewVultr(simOpts...)
	e.hot = sim.NewHotAisle(simOpts...)
	e.vultrCl = vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(e.vultr.Client()))
	e.vp = vultr.NewProvider(e.vultrCl)
	e.hp = hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(e.hot.Client())),
		hotaisle.WithBareMetal(true))
	e.m = e.manager(e.store)
	return e
}

// testOwner is the owner of the scenario tests' Managers: a restart with an
// empty store finds the first Manager's resources by it.
const testOwner = "t1"

// manager builds a Manager over the env's providers (a restart builds another).
func (e *env) manager(store fleet.Store) *fleet.Manager {
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Policy: e.policy, Store: store, Owner: testOwner,
		OnEvent: func(ev fleet.Event) {
			e.mu.Lock()
			e.events = append(e.events, ev)
			hook := e.onEvent
			e.mu.Unlock()
			if hook != nil {
				hook(ev)
			}
		}})
	require.NoError(e.t, err)
	e.t.Cleanup(m.Close)
	return m
}

// run reconciles every 10 s for d of cloud time.
func (e *env) run(d time.Duration) {
	e.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		require.NoError(e.t, e.m.Reconcile(e.t.Context()))
		time.Sleep(10 * time.Second)
	}
}

// runUntil reconciles until cond holds or limit passes; it reports whether cond held.
func (e *env) runUntil(limit time.Duration, cond func() bool) bool {
	e.t.Helper()
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		require.NoError(e.t, e.m.Reconcile(e.t.Context()))
		if cond() {
			return true
		}
		time.Sleep(10 * time.Second)
	}
	return false
}

func (e *env) count(typ fleet.EventType) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func (e *env) eventsOf(typ fleet.EventType) []fleet.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []fleet.Event
	for _, ev := range e.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// live counts the fakes' live resources of a kind ("" for every kind).
func live(res []sim.Resource, kind string) int {
	n := 0
	for _, r := range res {
		if r.Live() && (kind == "" || r.Kind == kind) {
			n++
		}
	}
	return n
}

func (e *env) liveServers() int {
	n := 0
	for _, r := range append(e.vultr.Resources(), e.hot.Resources()...) {
		if r.Live() && r.Kind != "vpc" && r.Kind != "ssh_key" {
			n++
		}
	}
	return n
}

// assertNothingLeft checks the fakes' inventory: no server, no VPC.
func (e *env) assertNothingLeft() {
	e.t.Helper()
	assert.Zero(e.t, e.liveServers(), "servers left")
	assert.Zero(e.t, live(e.vultr.Resources(), "vpc"), "VPCs left")
}

// calls counts the fake's calls of a route with a status (0: any status).
func calls(log []sim.Call, route string, status int) int {
	n := 0
	for _, c := range log {
		if c.Route == route && (status == 0 || c.Status == status) {
			n++
		}
	}
	return n
}

func spec(name string, nodes int, r fleet.Requirements) fleet.Spec {
	return fleet.Spec{Name: name, Nodes: nodes, Requirements: r}
}

func vultrType(types ...string) fleet.Requirements {
	return fleet.Requirements{Providers: []string{"vultr"}, InstanceTypes: types}
}

func hotType(types ...string) fleet.Requirements {
	return fleet.Requirements{Providers: []string{"hotaisle"}, InstanceTypes: types}
}

func (e *env) only(fleetName string) fleet.Instance {
	e.t.Helper()
	insts := e.m.Instances(fleetName)
	require.NotEmpty(e.t, insts)
	return insts[0]
}

func errHas(ev []fleet.Event, sub string) bool {
	for _, x := range ev {
		if strings.Contains(x.Err, sub) {
			return true
		}
	}
	return false
}
