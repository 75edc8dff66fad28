package consumertest

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/internal/costopt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	biHotVM   = fleet.Requirements{Providers: []string{fleet.ProviderHotAisle}, InstanceTypes: []string{"vm-mi300x-1"}}
	biVultrVM = fleet.Requirements{Providers: []string{fleet.ProviderVultr}, InstanceTypes: []string{"vcg-a100-12c-120g-80vram"}}
)

func biSpec(name string, req fleet.Requirements) fleet.Spec {
	return fleet.Spec{Name: name, IdleTimeout: 5 * time.Minute, SSHKeys: []string{authorizedKey}, Requirements: req}
}

// A steady stream of short jobs on Vultr VMs (3 minutes every 20, for 3
// hours), placed by Acquire and grown by Apply as the docs say: one node
// an hour, the least bill for the jobs (a guard).
func TestTesterBISteadyStreamOnVultrCostsTheOptimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, fleet.Policy{})
		var jobs []biJob
		for a := time.Duration(0); a < 3*time.Hour; a += 20 * time.Minute {
			jobs = append(jobs, biJob{"s", a, 3 * time.Minute})
		}
		o := biPlay(t, w, []fleet.Spec{biSpec("s", biVultrVM)}, jobs, 0, nil)
		cs := biCharges(w, o.start)
		opt := biOptimum(t, costopt.VultrVM(), o.waits[0], jobs)
		assert.InDelta(t, opt, biTotal(cs), 0.02, "bill $%.2f, optimum $%.2f", biTotal(cs), opt)
		for i, wt := range o.waits {
			assert.LessOrEqual(t, wt, 2*time.Minute, "job %d waited %v", i, wt)
		}
	})
}

// Jobs cancelled before they start: the orchestrator Acquires a node for a
// job, the job is cancelled, and the node is given back at once (Acquire
// then GiveBack, no work). No job ever ran on the fleet. Without the
// hand-out the Hot Aisle node goes at its minimum's end ("a fleet with no
// recorded jobs keeps none"); with it the re-buy hold keeps the node a
// whole minimum past its end: on a VM 30 idle minutes ($1.50), on bare
// metal 8 idle hours ($216.96), that no job used and a rule releasing idle
// nodes at their minimum's end (or dstack's) would not pay.
func TestTesterBICancelledHandOutBuysAHold(t *testing.T) {
	for _, k := range []struct {
		name    string
		req     fleet.Requirements
		minimum time.Duration
		rate    float64
	}{
		{"VM", biHotVM, 30 * time.Minute, 2.99},
		{"bare metal", fleet.Requirements{Providers: []string{fleet.ProviderHotAisle}, InstanceTypes: []string{"bm-mi300x-8"}}, 8 * time.Hour, 27.12},
	} {
		for _, cancelled := range []bool{false, true} {
			t.Run(k.name+map[bool]string{false: " no hand-out", true: " hand-out cancelled"}[cancelled], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					w := biWorld(t, fleet.Policy{})
					s := biSpec("x", k.req)
					s.Nodes = 1
					var jobs []biJob
					if cancelled {
						jobs = []biJob{{"x", 20 * time.Minute, 0}}
					}
					o := biPlay(t, w, []fleet.Spec{s}, jobs, 2*k.minimum+time.Hour, nil)
					cs := biCharges(w, o.start)
					require.Len(t, cs, 1)
					least := k.rate * k.minimum.Hours()
					assert.LessOrEqual(t, cs[0].Billed, k.minimum+time.Minute,
						"a node no job ran on billed %v ($%.2f), its minimum would do ($%.2f): $%.2f paid for a hold",
						cs[0].Billed, cs[0].USD, least, cs[0].USD-least)
				})
			})
		}
	}
}
