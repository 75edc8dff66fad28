package fleet_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusedKindPlay is one idle VM (IdleTimeout 1 min, never used) under Run,
// with its provider's bare-metal listing refused for good (refuse: a key
// without bare-metal access) or not; at jobAt after the VM's billing start
// an orchestrator asks Acquire for a node for a job of length job (growing
// the fleet again when none is idle).
type refusedKindPlay struct {
	req        fleet.Requirements
	refuse     func(e *env)
	charges    func(e *env) []sim.Charge
	jobAt, job time.Duration
}

// run plays p and returns when the first VM's billing ended (from its
// start), whether the Acquire got it, and the billed time and USD of all.
func (p refusedKindPlay) run(t *testing.T, refuse bool) (end time.Duration, acquired bool, billed time.Duration, usd float64) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		if refuse {
			p.refuse(e)
		}
		s := spec("f", 1, p.req)
		s.IdleTimeout = time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		stop := e.running()
		for len(p.charges(e)) == 0 {
			time.Sleep(time.Second)
		}
		from := p.charges(e)[0].From
		time.Sleep(time.Until(from.Add(p.jobAt)))
		inst, err := e.m.Acquire(t.Context(), "f")
		acquired = err == nil
		if !acquired { // the orchestrator grows the fleet again for its job
			require.True(t, errors.Is(err, fleet.ErrNoIdle), "%v", err)
			require.NoError(t, e.m.Apply(t.Context(), s))
			for ; err != nil; inst, err = e.m.Acquire(t.Context(), "f") {
				time.Sleep(10 * time.Second)
			}
		}
		time.Sleep(p.job)
		require.NoError(t, e.m.MarkIdle(inst.ID))
		time.Sleep(time.Until(from.Add(3 * time.Hour)))
		stop()
		c := p.charges(e)[0]
		end = c.To.Sub(c.From).Round(time.Second)
		for _, c := range p.charges(e) {
			billed += c.Billed
			usd += c.USD
		}
	})
	return end, acquired, billed, usd
}

// A Vultr key without bare-metal access (403 on its listing for good, the
// case fleet/kindlist.go serves) leaves Vultr calm for its VMs: an account
// refusal does not pass by itself and says nothing of the next VM delete,
// so an idle VM stays acquirable until 57:00 and serves a 2-minute job at
// 52:00, as with bare metal listable: 1 h billed (tester AK: released at
// 50:00, a second VM bought, 2 h).
func TestBareMetalListingRefusalLeavesVultrCalm(t *testing.T) {
	p := refusedKindPlay{req: vultrType("vcg-a100-12c-120g-80vram"), refuse: func(e *env) { refuseVultrMetal(e, 0) },
		charges: func(e *env) []sim.Charge { return e.vultr.Ledger().Charges }, jobAt: 52 * time.Minute, job: 2 * time.Minute}
	cEnd, cAcq, cBilled, cUSD := p.run(t, false)
	end, acq, billed, usd := p.run(t, true)
	t.Logf("bare metal listable: released at %v, Acquire at 52:00 served %v, billed %v, $%.3f", cEnd, cAcq, cBilled, cUSD)
	t.Logf("bare metal refused:  released at %v, Acquire at 52:00 served %v, billed %v, $%.3f", end, acq, billed, usd)
	assert.Equal(t, cBilled, billed, "the 2-minute job at 52:00 costs no second hour")
	assert.True(t, acq, "the Acquire at 52:00 served by the idle VM (the calm margin)")
	assert.Greater(t, end, 55*time.Minute, "released at the calm margin (57:00), not the wide one (50:00)")
}

// The Hot Aisle side: a team whose key may not list bare metal keeps the
// 1-minute margin for its VMs, so a never-used VM is still there for a
// 3-minute job at 24:00 and the workload bills as with bare metal listable
// (tester AK: released at 20:00, a second minimum bought, 1 h 31 min
// instead of 1 h). The hold's end on a minute boundary is released just
// before it (beforeMinuteBoundary): the same run billed 61 minutes instead
// of 60 when its delete landed late.
func TestHotAisleBareMetalRefusalLeavesVMsCalm(t *testing.T) {
	p := refusedKindPlay{req: hotType("vm-mi300x-1"), refuse: func(e *env) {
		require.NoError(t, e.hot.Inject(sim.Fault{Route: "GET /api/teams/{team}/bare_metal/", Status: 403}))
	}, charges: func(e *env) []sim.Charge { return e.hot.Ledger().Charges }, jobAt: 24 * time.Minute, job: 3 * time.Minute}
	cEnd, cAcq, cBilled, cUSD := p.run(t, false)
	end, acq, billed, usd := p.run(t, true)
	t.Logf("bare metal listable: first VM released at %v, Acquire at 24:00 served %v, billed %v, $%.3f", cEnd, cAcq, cBilled, cUSD)
	t.Logf("bare metal refused:  first VM released at %v, Acquire at 24:00 served %v, billed %v, $%.3f", end, acq, billed, usd)
	assert.True(t, acq)
	assert.Equal(t, cBilled, billed)
}
