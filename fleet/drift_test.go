package fleet_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// switchAgent is a test agent whose health the test decides per instance.
type switchAgent struct {
	mu     sync.Mutex
	sick   map[string]bool // provider id → Check fails
	starts map[string]int
}

func newSwitchAgent() *switchAgent {
	return &switchAgent{sick: map[string]bool{}, starts: map[string]int{}}
}

func (a *switchAgent) Start(_ context.Context, inst fleet.Instance) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.starts[inst.ID]++
	if a.sick[inst.ID] { // Start verifies health (fleet.Agent): a sick agent does not come up
		return context.DeadlineExceeded
	}
	return nil
}

func (a *switchAgent) Check(_ context.Context, inst fleet.Instance) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sick[inst.ID] {
		return context.DeadlineExceeded
	}
	return nil
}

func (a *switchAgent) set(id string, sick bool) {
	a.mu.Lock()
	a.sick[id] = sick
	a.mu.Unlock()
}

// drift is one drift scenario's world on one cloud.
type drift struct {
	*env
	agent *switchAgent
	cloud string
	req   fleet.Requirements
}

func newDrift(t *testing.T, cloud string, pol fleet.Policy) *drift {
	d := &drift{env: newEnv(t, pol), agent: newSwitchAgent(), cloud: cloud, req: vultrVM("ewr")}
	if cloud == "hotaisle" {
		d.req = hotType("vm-mi300x-1")
	}
	d.m = d.managerWith(fleet.Config{Providers: []fleet.Provider{d.vp, d.hp}, Owner: testOwner, Agent: d.agent})
	return d
}

func (d *drift) halt(id string) {
	d.t.Helper()
	if d.cloud == "vultr" {
		require.NoError(d.t, d.vultr.HaltOutOfBand(id))
	} else {
		require.NoError(d.t, d.hot.HaltOutOfBand(id))
	}
}

// ready applies a one-node fleet and returns its instance once idle.
func (d *drift) ready() fleet.Instance {
	d.t.Helper()
	require.NoError(d.t, d.m.Apply(d.t.Context(), spec("f", 1, d.req)))
	require.True(d.t, d.runUntil(10*time.Minute, func() bool { return d.only("f").Status == fleet.StatusIdle }))
	return d.only("f")
}

// replaced reports the fleet's active member other than old, if idle.
func (d *drift) replaced(old string) bool {
	for _, i := range d.m.Instances("f") {
		if i.ID != old && i.Status == fleet.StatusIdle {
			return true
		}
	}
	return false
}

func (d *drift) teardown() {
	d.t.Helper()
	require.NoError(d.t, d.m.Delete(d.t.Context(), "f"))
	require.True(d.t, d.runUntil(3*time.Hour, func() bool { return len(d.m.Fleets()) == 0 }))
	d.assertNothingLeft()
}

func bothClouds(t *testing.T, f func(t *testing.T, cloud string)) {
	for _, cloud := range []string{"vultr", "hotaisle"} {
		t.Run(cloud, func(t *testing.T) { synctest.Test(t, func(t *testing.T) { f(t, cloud) }) })
	}
}

// A machine stopped out of band (it still bills) is noticed — from the
// Vultr listing's power status, or from the Hot Aisle VM state once the
// agent check fails — released and replaced.
func TestStoppedOutOfBandIsReplaced(t *testing.T) {
	bothClouds(t, func(t *testing.T, cloud string) {
		d := newDrift(t, cloud, fleet.Policy{})
		old := d.ready().ID
		d.halt(old)
		d.agent.set(old, true)
		require.True(t, d.runUntil(20*time.Minute, func() bool { return d.replaced(old) }))
		assert.Positive(t, d.count(fleet.EventInstanceStopped))
		d.teardown()
	})
}

// With OnStoppedRestart the stopped machine is powered on again and its
// agent started again; nothing is replaced.
func TestStoppedOutOfBandIsRestarted(t *testing.T) {
	bothClouds(t, func(t *testing.T, cloud string) {
		d := newDrift(t, cloud, fleet.Policy{OnStopped: fleet.OnStoppedRestart})
		old := d.ready().ID
		d.halt(old)
		d.agent.set(old, true)
		require.True(t, d.runUntil(20*time.Minute, func() bool {
			if d.count(fleet.EventInstanceStopped) == 0 {
				return false
			}
			d.agent.set(old, false) // healthy once started again
			d.agent.mu.Lock()
			restarted := d.agent.starts[old] >= 2
			d.agent.mu.Unlock()
			return restarted && d.only("f").Status == fleet.StatusIdle
		}))
		d.run(2 * time.Minute)
		assert.Len(t, activeOf(d.m.Instances("f")), 1, "not replaced")
		assert.Equal(t, old, activeOf(d.m.Instances("f"))[0].ID)
		d.agent.mu.Lock()
		assert.GreaterOrEqual(t, d.agent.starts[old], 2, "the agent was started again")
		d.agent.mu.Unlock()
		d.teardown()
	})
}

// An agent that stops answering its checks is restarted at each failed
// check, and after Policy.AgentCheckFailures in a row the instance is
// released and replaced.
func TestUnhealthyAgentIsRestartedThenReplaced(t *testing.T) {
	bothClouds(t, func(t *testing.T, cloud string) {
		d := newDrift(t, cloud, fleet.Policy{})
		old := d.ready().ID
		d.agent.set(old, true)
		require.True(t, d.runUntil(30*time.Minute, func() bool { return d.replaced(old) }))
		assert.Equal(t, 3, d.count(fleet.EventAgentUnhealthy))
		d.agent.mu.Lock()
		assert.GreaterOrEqual(t, d.agent.starts[old], 3, "restarted at each failed check")
		d.agent.mu.Unlock()
		d.teardown()
	})
}

// A label removed out of band is written again from the records, so a
// restart with an empty Store still finds the machine as its owner's.
func TestLabelLostOutOfBandIsWrittenAgain(t *testing.T) {
	bothClouds(t, func(t *testing.T, cloud string) {
		d := newDrift(t, cloud, fleet.Policy{})
		inst := d.ready()
		want := fleet.Label{Owner: testOwner, Fleet: "f", RequestID: inst.RequestID}.String()
		label := func() string {
			for _, r := range append(d.vultr.Resources(), d.hot.Resources()...) {
				if r.ID == inst.ID {
					return r.Label + r.Description
				}
			}
			return ""
		}
		if cloud == "vultr" {
			require.NoError(t, d.vultr.RelabelOutOfBand(inst.ID, "renamed in the console", nil))
		} else {
			require.NoError(t, d.hot.RelabelOutOfBand(inst.ID, ""))
		}
		require.True(t, d.runUntil(20*time.Minute, func() bool { return label() == want }))
		assert.Equal(t, 1, d.count(fleet.EventLabelRewritten))
		d.m.Close()
		d.m = d.manager(fleet.NewMemoryStore())
		require.NoError(t, d.m.Apply(t.Context(), spec("f", 1, d.req)))
		d.run(2 * time.Minute)
		assert.Equal(t, []string{inst.ID}, idsOf(activeOf(d.m.Instances("f"))), "adopted by its label, not created again")
		d.teardown()
	})
}

func idsOf(insts []fleet.Instance) []string {
	var out []string
	for _, i := range insts {
		out = append(out, i.ID)
	}
	return out
}

// A Vultr server deleted in the console answers 400 "invalid instance ID":
// it is gone, replaced, and a later Delete of the fleet finishes.
func TestConsoleDeletedVultrServerIsReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDrift(t, "vultr", fleet.Policy{})
		old := d.ready().ID
		require.NoError(t, d.vultr.DestroyOutOfBand(old, sim.VultrGoneInvalidID))
		require.True(t, d.runUntil(20*time.Minute, func() bool { return d.replaced(old) }))
		assert.Equal(t, 1, d.count(fleet.EventInstanceVanished))
		d.teardown()
		assert.Zero(t, d.count(fleet.EventTerminationStuck))
	})
}

// An account-level refusal stops the provider's creates and backs off: a
// fleet of 1 makes a handful of attempts an hour, with one alert.
func TestAccountRefusalBacksOffTheProvider(t *testing.T) {
	bothClouds(t, func(t *testing.T, cloud string) {
		d := newDrift(t, cloud, fleet.Policy{})
		route := "POST /v2/instances"
		if cloud == "vultr" {
			require.NoError(t, d.vultr.Inject(sim.Fault{Route: route, Status: http.StatusForbidden, Message: "Unauthorized IP address: 192.0.2.7"}))
		} else {
			route = "POST /api/teams/{team}/virtual_machines/"
			d.hot.SetVMLimit(0)
		}
		require.NoError(t, d.m.Apply(t.Context(), spec("f", 1, d.req)))
		d.run(time.Hour)
		attempts := calls(append(d.vultr.Calls(), d.hot.Calls()...), route, 0)
		assert.Positive(t, attempts)
		assert.LessOrEqual(t, attempts, 6, "a handful of create attempts an hour")
		assert.Equal(t, 1, d.count(fleet.EventCreatesRefused), "one alert naming the refusal")
	})
}

// A plan sold out after the catalog was read is refused once, then the
// next offer is taken.
func TestPlanSoldOutAfterListingIsTriedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDrift(t, "hotaisle", fleet.Policy{})
		require.NoError(t, d.hot.SoldOutAfterListing("vm-mi300x-1"))
		require.NoError(t, d.hot.SetQuantity("vm-mi300x-2", 10))
		require.NoError(t, d.m.Apply(t.Context(), spec("f", 5, hotType("vm-mi300x-1", "vm-mi300x-2"))))
		d.run(5 * time.Minute)
		assert.Equal(t, 1, calls(d.hot.Calls(), "POST /api/teams/{team}/virtual_machines/", http.StatusNotFound), "refused once")
		assert.Len(t, activeOf(d.m.Instances("f")), 5)
	})
}

// Apply refuses what no offer could ever meet, naming the value.
func TestApplyRefusesTheImpossible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		for _, c := range []struct {
			spec fleet.Spec
			says string
		}{
			{spec("a", 1, fleet.Requirements{GPUModel: "MI300"}), "MI300X"},
			{spec("b", 1, fleet.Requirements{Providers: []string{"vultr"}, Regions: []string{"nowhere"}}), `"nowhere"`},
			{spec("c", 1, vultrType("vc2-1c-1gbb")), "vc2-1c-1gb"},
			{fleet.Spec{Name: "d", Nodes: 1, MinNodes: 3}, "MinNodes 3 is over Nodes 1"},
		} {
			err := e.m.Apply(t.Context(), c.spec)
			require.ErrorIs(t, err, fleet.ErrInvalidSpec, c.spec.Name)
			assert.Contains(t, err.Error(), c.says)
		}
		require.NoError(t, e.m.Apply(t.Context(), spec("ok", 1, fleet.Requirements{GPUModel: "mi300x"})))
		require.NoError(t, e.m.Apply(t.Context(), spec("cheap", 1, fleet.Requirements{GPUModel: "MI300X", MaxPricePerHour: 0.001})))
		e.run(time.Minute)
		ev := e.eventsOf(fleet.EventNoOffers)
		require.NotEmpty(t, ev)
		assert.Regexp(t, `^0 of \d+ offers match \(none meets the price requirement\)`, ev[0].Message)
	})
}

// With no fleet and nothing pending, Run makes no calls after its start
// (the first listing of each provider, and one more VisibilityGrace later).
func TestIdleRunMakesNoCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- e.m.Run(ctx) }()
		time.Sleep(10 * time.Minute)
		early := len(e.vultr.Calls()) + len(e.hot.Calls())
		assert.Positive(t, early, "the first listing of each provider, and one more VisibilityGrace later")
		time.Sleep(time.Hour)
		first := len(e.vultr.Calls()) + len(e.hot.Calls())
		// every DriftCheckInterval (10 min) for the first hour: 6 listings of both kinds per provider,
		// and of Vultr's VPCs (a VPC a crashed process created may show late)
		assert.LessOrEqual(t, first-early, (3+2)*6, "the sweeps of the first hour list servers and VPCs only")
		time.Sleep(6 * time.Hour)
		assert.Equal(t, first, len(e.vultr.Calls())+len(e.hot.Calls()), "no call while nothing is pending")
		cancel()
		<-done
	})
}

// A Hot Aisle label that could not be written after the provision
// (Instance.LabelError) is written by the Manager later.
func TestFailedLabelWriteIsWrittenLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDrift(t, "hotaisle", fleet.Policy{})
		require.NoError(t, d.hot.Inject(sim.Fault{Route: "PATCH /api/teams/{team}/virtual_machines/{vm}/", Status: 503, Duration: 3 * time.Minute}))
		inst := d.ready()
		require.NotEmpty(t, inst.LabelError, "the provider reported the failed write")
		want := fleet.Label{Owner: testOwner, Fleet: "f", RequestID: inst.RequestID}.String()
		require.True(t, d.runUntil(10*time.Minute, func() bool {
			for _, r := range d.hot.Resources() {
				if r.ID == inst.ID {
					return r.Description == want
				}
			}
			return false
		}))
		assert.Empty(t, d.only("f").LabelError)
		assert.Equal(t, 1, d.count(fleet.EventLabelRewritten))
	})
}

// A process that restarts without its Store and finds a member stopped out
// of band releases that one, not a healthy member, when the fleet is
// smaller than what it finds: nothing is created to replace it.
func TestRestartReleasesTheStoppedMemberFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 2, vultrVM("ewr"))))
		require.True(t, e.runUntil(10*time.Minute, func() bool { return countStatus(e.m.Instances("f"), fleet.StatusIdle) == 2 }))
		insts := e.m.Instances("f")
		halted, healthy := insts[0], insts[1]
		e.m.Close()
		require.NoError(t, e.vultr.HaltOutOfBand(halted.ID))
		servers := len(e.vultr.Resources())
		e.m = e.manager(fleet.NewMemoryStore())
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, vultrVM("ewr"))))
		gone := func() bool { return countStatus(e.m.Instances("f"), fleet.StatusTerminated) == 1 }
		require.True(t, e.runUntil(2*time.Hour, gone), "%+v", e.m.Instances("f"))
		e.run(10 * time.Minute)
		var kept []string
		for _, i := range e.m.Instances("f") {
			if i.Status != fleet.StatusTerminated {
				kept = append(kept, i.ID)
			}
		}
		assert.Equal(t, []string{healthy.ID}, kept, "the healthy member is kept")
		assert.Equal(t, servers, len(e.vultr.Resources()), "no replacement was created")
		require.NoError(t, e.m.Delete(t.Context(), "f"))
		require.True(t, e.runUntil(3*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		e.assertNothingLeft()
	})
}

func countStatus(insts []fleet.Instance, st fleet.Status) int {
	n := 0
	for _, i := range insts {
		if i.Status == st {
			n++
		}
	}
	return n
}
