package fleet_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/require"
)

// vultrWorld is one fleet's life on the Vultr sim under a running Manager
// (Manager.Run in the background); steps run at given cloud times from the
// first VM's billing start (the ledger's From). From tester AJ's probes.
type vultrWorld struct {
	t      *testing.T
	v      *sim.Vultr
	vp     *vultr.Provider
	store  fleet.Store
	policy fleet.Policy
	m      *fleet.Manager
	cancel context.CancelFunc
	done   chan error
	from   time.Time // the first VM's billing start
	id     string    // the first VM
}

// vultrWorldPlan is a Vultr cloud GPU plan billed per started hour.
const vultrWorldPlan = "vcg-a100-12c-120g-80vram"

// newVultrWorld applies spec under a Manager with policy and waits until
// every node is idle.
func newVultrWorld(t *testing.T, policy fleet.Policy, spec fleet.Spec) *vultrWorld {
	w := &vultrWorld{t: t, v: sim.NewVultr(), store: fleet.NewMemoryStore(), policy: policy}
	w.vp = vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(w.v.Client())))
	w.start()
	require.NoError(t, w.m.Apply(t.Context(), spec))
	for limit := time.Now().Add(30 * time.Minute); ; time.Sleep(10 * time.Second) {
		require.True(t, time.Now().Before(limit), "no node became ready")
		in := w.m.Instances(spec.Name)
		if len(in) == spec.Nodes && !slices.ContainsFunc(in, func(i fleet.Instance) bool { return i.Status != fleet.StatusIdle }) {
			w.id = in[0].ID
			break
		}
	}
	require.Len(t, w.v.Ledger().Charges, spec.Nodes)
	w.from = w.v.Ledger().Charges[0].From
	return w
}

// terminating is the id of the fleet's one instance being released.
func (w *vultrWorld) terminating(fleetName string) string {
	w.t.Helper()
	for limit := time.Now().Add(time.Minute); time.Now().Before(limit); time.Sleep(time.Second) {
		for _, in := range w.m.Instances(fleetName) {
			if in.Status == fleet.StatusTerminating {
				return in.ID
			}
		}
	}
	require.Fail(w.t, "no instance is being released")
	return ""
}

// start builds a Manager over the world's store and runs it.
func (w *vultrWorld) start() {
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{w.vp}, Store: w.store, Owner: "vw", Policy: w.policy})
	require.NoError(w.t, err)
	ctx, cancel := context.WithCancel(w.t.Context())
	w.m, w.cancel, w.done = m, cancel, make(chan error, 1)
	go func() { w.done <- m.Run(ctx) }()
}

// restart stops the running Manager and starts another over w.store.
func (w *vultrWorld) restart() {
	w.cancel()
	<-w.done
	w.m.Close()
	w.start()
}

// at sleeps until d after the billing start.
func (w *vultrWorld) at(d time.Duration) {
	w.t.Helper()
	require.True(w.t, time.Now().Before(w.from.Add(d)), "step at %v is already past", d)
	time.Sleep(time.Until(w.from.Add(d)))
}

// charge waits (up to horizon from the billing start) until the server id
// is gone, stops the Manager and returns the server's charge.
func (w *vultrWorld) charge(id string, horizon time.Duration) sim.Charge {
	w.t.Helper()
	of := func() sim.Charge {
		for _, c := range w.v.Ledger().Charges {
			if c.ResourceID == id {
				return c
			}
		}
		require.Fail(w.t, "no charge for "+id)
		return sim.Charge{}
	}
	for time.Now().Before(w.from.Add(horizon)) && of().Live {
		time.Sleep(10 * time.Second)
	}
	c := of()
	w.cancel()
	<-w.done
	w.m.Close()
	return c
}
