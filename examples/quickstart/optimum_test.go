package main

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two 10-minute jobs one after the other on Hot Aisle VMs (30-minute
// minimum): each instance alone costs its minimum, but the offline optimum
// runs both on one machine; on Vultr bare metal two jobs an hour apart need
// an hour each, alone or not.
func TestOfflineOptimumChainsTheRunsJobs(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	d := &driver{start: t0, workStart: map[string]time.Time{"a": at(1), "b": at(13), "v1": at(40), "v2": at(160)},
		workEnd: map[string]time.Time{"a": at(11), "b": at(23), "v1": at(50), "v2": at(170)}}
	vm := func(id string, created int) charge {
		return charge{provider: fleet.ProviderHotAisle, id: id, plan: "vm-mi300x-1", created: at(created), rate: 2.99, minimum: 30 * time.Minute,
			usd: 2.99 / 2, least: 2.99 / 2}
	}
	bm := func(id string, created int) charge {
		return charge{provider: fleet.ProviderVultr, id: id, plan: "vbm", created: at(created), rate: 17.52, usd: 17.52, least: 17.52}
	}
	charges := []charge{vm("a", 0), vm("b", 12), bm("v1", 0), bm("v2", 121), {provider: fleet.ProviderVultr, id: "idle", plan: "vbm"}}
	opt, proven := d.offlineOptimum(charges)
	require.True(t, proven)
	assert.InDelta(t, 2.99/2, opt[fleet.ProviderHotAisle], 1e-9, "one machine, from a minute before the first job: its minimum")
	assert.InDelta(t, 2*17.52, opt[fleet.ProviderVultr], 1e-9, "two hours: 40 minutes of boot before each job")
	assert.InDelta(t, 2.99/2+2*17.52, opt[""], 1e-9)
	rep := &report{charges: charges, optimum: opt, optimumProven: proven}
	charged, least := rep.bill(fleet.ProviderHotAisle)
	assert.InDelta(t, 2.99, least, 1e-9, "each instance alone costs its minimum")
	assert.Equal(t, "+100.0%", over(charged, opt[fleet.ProviderHotAisle]))
}
