package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/require"
)

// liveWorld is an orchestrator's world for the tests that play an orchestrator against a running Manager: both sims, a
// Store, and a Manager running in the background (Run), which restart
// replaces with a new Manager on the same Store. Build it inside a
// synctest bubble.
type liveWorld struct {
	t      *testing.T
	v      *sim.Vultr
	h      *sim.HotAisle
	vp     *vultr.Provider
	hp     *hotaisle.Provider
	store  fleet.Store
	pol    fleet.Policy
	m      *fleet.Manager
	cancel context.CancelFunc
	done   chan error
}

func newLiveWorld(t *testing.T, pol fleet.Policy, simOpts ...sim.Option) *liveWorld {
	t.Helper()
	w := &liveWorld{t: t, pol: pol, store: fleet.NewMemoryStore()}
	w.v, w.h = sim.NewVultr(simOpts...), sim.NewHotAisle(simOpts...)
	w.vp = vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(w.v.Client())))
	w.hp = hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(w.h.Client())),
		hotaisle.WithBareMetal(true))
	w.start()
	return w
}

// start builds a Manager on the world's Store and runs it.
func (w *liveWorld) start() {
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{w.vp, w.hp}, Policy: w.pol,
		Store: w.store, Owner: "tu"})
	require.NoError(w.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w.m, w.cancel, w.done = m, cancel, make(chan error, 1)
	go func() { w.done <- m.Run(ctx) }()
}

// stop stops the running Manager.
func (w *liveWorld) stop() {
	w.cancel()
	<-w.done
	w.m.Close()
}

// finish stops the Manager at the end of a probe and lets the calls under
// way in the sims (a blocking Hot Aisle delete) end.
func (w *liveWorld) finish() {
	w.stop()
	time.Sleep(5 * time.Minute)
}

// acquire polls Acquire every 10 s until it hands a node out or within passes.
func (w *liveWorld) acquire(fleetName string, within time.Duration) (fleet.Instance, bool) {
	for end := time.Now().Add(within); ; time.Sleep(10 * time.Second) {
		if inst, err := w.m.Acquire(context.Background(), fleetName); err == nil {
			return inst, true
		}
		if !time.Now().Before(end) {
			return fleet.Instance{}, false
		}
	}
}

// ledger is both sims' server charges.
func (w *liveWorld) ledger() []sim.Charge {
	return servers(append(w.v.Ledger().Charges, w.h.Ledger().Charges...))
}

// settle waits until some server was billed and none bills now (or limit passes).
func (w *liveWorld) settle(limit time.Duration) {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(30 * time.Second) {
		liveN, cs := 0, w.ledger()
		for _, c := range cs {
			if c.Live {
				liveN++
			}
		}
		if len(cs) > 0 && liveN == 0 {
			return
		}
	}
}
