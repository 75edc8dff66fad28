package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hot Aisle bare metal is prepaid for 8 hours at the reserve: releasing it
// early refunds nothing (the minimum is charged, forced or not). A server
// whose OS install takes 30 minutes (three times the usual 10) is still
// well inside the window already paid, yet the Manager kills it at the
// default 20-minute provisioning deadline, pays the 8 hours for nothing and
// stalls the fleet: the user gets no machine for 216.96 USD. Scenario S11
// asks for per-kind deadlines so that a slow but healthy server is not
// killed in a window already paid ("a 20-minute deadline would kill a
// healthy server and waste a paid hour"); here it wastes 7h40m already paid.
func TestPrepaidBareMetalNotKilledInsideItsPaidWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{}, sim.WithHotAisleInstallTime(30*time.Minute))
		require.NoError(t, e.m.Apply(t.Context(), spec("bm", 1, hotType("bm-mi300x-8"))))
		ready := e.runUntil(2*time.Hour, func() bool { return e.count(fleet.EventInstanceReady) > 0 })
		assert.Zero(t, e.count(fleet.EventDeadlineMissed),
			"a prepaid server still installing inside its paid 8 h was given up: %v", e.eventsOf(fleet.EventDeadlineMissed))
		assert.True(t, ready, "the server (installed after 30 min, paid for 8 h) never became ready; events %v", summary(e))
		assert.LessOrEqual(t, e.hot.Ledger().TotalUSD, 8*27.12+0.01, "one 8 h reservation at most")
	})
}

// A Hot Aisle bare-metal server that never finishes installing: its
// 45-minute provisioning deadline passes inside the 8 prepaid hours, which
// is said once (DeadlineDeferred, with the release time); it is released
// only at the minimum's end less MinuteReleaseMargin, and nothing more than
// the 8 hours is billed.
func TestPrepaidBareMetalThatNeverInstallsIsReleasedAtItsMinimumsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{}, sim.WithHotAisleInstallTime(24*time.Hour))
		require.NoError(t, e.m.Apply(t.Context(), spec("bm", 1, hotType("bm-mi300x-8"))))
		e.run(time.Hour)
		require.Equal(t, 1, e.count(fleet.EventDeadlineDeferred))
		assert.Zero(t, e.count(fleet.EventDeadlineMissed))
		inst := e.only("bm")
		assert.Equal(t, fleet.StatusProvisioning, inst.Status)
		deferred := e.eventsOf(fleet.EventDeadlineDeferred)[0]
		assert.Equal(t, inst.Created.Add(8*time.Hour-time.Minute), deferred.At, "kept to the minimum's end less the margin")
		assert.InDelta(t, 45*time.Minute, deferred.Time.Sub(inst.Created), float64(time.Minute), "the deadline of Hot Aisle bare metal")

		require.True(t, e.runUntil(8*time.Hour, func() bool { return e.count(fleet.EventDeadlineMissed) == 1 }))
		missed := e.eventsOf(fleet.EventDeadlineMissed)[0]
		assert.False(t, missed.Time.Before(deferred.At), "not released before %v: %v", deferred.At, missed)
		require.True(t, e.runUntil(time.Hour, e.terminated("bm")))
		assert.Equal(t, 1, e.count(fleet.EventDeadlineDeferred), "said once")
		assert.Zero(t, e.liveServers())
		assert.InDelta(t, 8*27.12, e.hot.Ledger().TotalUSD, 0.01, "the 8 prepaid hours, nothing more")
	})
}

// A Vultr VM is billed per started hour, not prepaid: its 20-minute
// deadline releases it as before (the fleet moves on, S12), with no
// deferral.
func TestHourlyBilledVMIsReleasedAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.SlowProvisioning("vc2-*", 3*time.Hour))
		r := vultrType(vm)
		r.Regions = []string{"ewr"}
		require.NoError(t, e.m.Apply(t.Context(), spec("v", 1, r)))
		require.True(t, e.runUntil(time.Hour, func() bool { return e.count(fleet.EventDeadlineMissed) == 1 }))
		inst := e.m.Instances("v")[0]
		assert.InDelta(t, 20*time.Minute, e.eventsOf(fleet.EventDeadlineMissed)[0].Time.Sub(inst.Created), float64(time.Minute))
		assert.Zero(t, e.count(fleet.EventDeadlineDeferred))
	})
}

// Bare metal whose offer carries no deadline (an instance adopted from a
// listing, a third-party provider) gets Policy.BareMetalProvisionTimeout
// (55 minutes), not the VM default of 20.
func TestBareMetalWithoutOfferDeadlineGetsThePolicysBareMetalDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.SlowProvisioning("vbm-*", 3*time.Hour))
		p := &noDeadline{Provider: e.vp}
		m := e.managerWith(fleet.Config{Providers: []fleet.Provider{p}, Owner: testOwner})
		r := vultrType(mi300x)
		r.Regions = []string{"ord"}
		require.NoError(t, m.Apply(t.Context(), spec("b", 1, r)))
		runFor(t, m, 90*time.Minute)
		missed := e.eventsOf(fleet.EventDeadlineMissed)
		require.Len(t, missed, 1)
		inst := m.Instances("b")[0]
		assert.InDelta(t, 55*time.Minute, missed[0].At.Sub(inst.Created), float64(time.Minute))
	})
}

// noDeadline is a provider whose offers and instances say no provisioning
// deadline.
type noDeadline struct{ fleet.Provider }

func (p *noDeadline) Offers(ctx context.Context) ([]fleet.Offer, error) {
	offers, err := p.Provider.Offers(ctx)
	for i := range offers {
		offers[i].ProvisionTimeout = 0
	}
	return offers, err
}
