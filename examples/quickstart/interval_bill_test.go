package main

import (
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
)

// billedOf is each provider's billed time in a report: the sum of its
// instances' billed durations.
func billedOf(rep *report) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, c := range rep.charges {
		out[c.provider] += c.billed
	}
	return out
}

// Issue 17 A: the quickstart slept a fixed -interval between its passes,
// so a release whose last safe moment fell between two passes was carried
// out late: with -interval 20m the Vultr bare-metal nodes were billed 3 h
// instead of 2, with -interval 2m a Hot Aisle VM 31 minutes instead of 30.
// Whatever -interval, the bill must be the one of the default 10 s.
func TestQuickstartLongIntervalBillsAsTheShortOne(t *testing.T) {
	base, _ := quickstartInBubble(t)
	want := billedOf(base)
	t.Logf("-interval 10s: billed %v; $%.2f", want, mustBill(base))
	for _, interval := range []string{"2m", "7m", "20m", "45m"} {
		t.Run(interval, func(t *testing.T) {
			rep, _ := quickstartInBubble(t, "-interval", interval)
			got := billedOf(rep)
			t.Logf("-interval %s: billed %v; $%.2f", interval, got, mustBill(rep))
			assert.Empty(t, rep.errs)
			assert.Empty(t, rep.leaked)
			assert.Equal(t, want[fleet.ProviderVultr], got[fleet.ProviderVultr], "Vultr")
			assert.Equal(t, want[fleet.ProviderHotAisle], got[fleet.ProviderHotAisle], "Hot Aisle")
			charged, _ := rep.bill("")
			assert.InDelta(t, mustBill(base), charged, 0.005)
		})
	}
}

func mustBill(rep *report) float64 {
	charged, _ := rep.bill("")
	return charged
}

// The same with Hot Aisle bare metal (480-minute minimum) in the run.
func TestQuickstartBareMetalLongIntervalBillsAsTheShortOne(t *testing.T) {
	if testing.Short() {
		t.Skip("eight hours of cloud time")
	}
	base, _ := quickstartInBubble(t, "-bare-metal", "-interval", "30s")
	want := billedOf(base)
	rep, _ := quickstartInBubble(t, "-bare-metal", "-interval", "25m")
	got := billedOf(rep)
	t.Logf("-interval 30s: billed %v, $%.2f; -interval 25m: billed %v, $%.2f", want, mustBill(base), got, mustBill(rep))
	assert.Empty(t, rep.errs)
	assert.Empty(t, rep.leaked)
	assert.Equal(t, want, got)
	assert.InDelta(t, mustBill(base), mustBill(rep), 0.005)
}
