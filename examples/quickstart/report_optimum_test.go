package main

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Five Hot Aisle VMs and three Vultr bare-metal nodes, each paying exactly
// what the offline optimum pays (one machine per node, each its minimum or
// one hour). The optimum's table must not show the bill below the least
// possible bill for the same jobs: its "all" row sums the same amounts in
// another order and prints 60.04 as the optimum beside 60.03 charged.
func TestOptimumTableNeverShowsTheBillBelowTheOptimum(t *testing.T) {
	_, out := quickstartInBubble(t, "-hotaisle-nodes", "5", "-nodes", "3")
	rows := regexp.MustCompile(`(?m)^  (hotaisle|vultr|all) +([0-9]+\.[0-9]{2}) +([0-9]+\.[0-9]{2})(  [+-][0-9.]+%)?$`).FindAllStringSubmatch(out, -1)
	require.Len(t, rows, 3, "the optimum's table:\n%s", out)
	for _, m := range rows {
		opt, _ := strconv.ParseFloat(m[2], 64)
		charged, _ := strconv.ParseFloat(m[3], 64)
		assert.GreaterOrEqual(t, charged, opt, "row %q: the bill printed below the offline optimum", m[0])
	}
}

// No node worked (seen with "go run ./examples/quickstart -plain -bare-metal
// -speed 50000": "fleet train: 0 of 2 nodes ready after 2h0m0s", 296.01 USD
// charged): the whole bill is for no job. Acceptance point 5: the report
// compares the bill with the offline optimum for the run's jobs (here none:
// 0.00) and says what it compares with; the section is left out instead.
func TestReportComparesWithTheOptimumWhenNoJobRan(t *testing.T) {
	d := &driver{start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), workStart: map[string]time.Time{}, workEnd: map[string]time.Time{}}
	charges := []charge{
		{provider: fleet.ProviderVultr, id: "v1", plan: "vbm", created: d.start, rate: 17.52, usd: 35.04, least: 17.52, ledger: true},
		{provider: fleet.ProviderHotAisle, id: "h1", plan: "vm-mi300x-1", created: d.start, rate: 2.99, minimum: 30 * time.Minute,
			usd: 5.98, least: 1.495, ledger: true},
	}
	opt, proven := d.offlineOptimum(charges)
	rep := &report{charges: charges, optimum: opt, optimumProven: proven}
	var out bytes.Buffer
	rep.printBill(&out)
	assert.Contains(t, out.String(), "bill beside the offline optimum for the same jobs",
		"41.02 USD charged for no work; the report does not compare it with the optimum:\n%s", out.String())
	assert.Regexp(t, `\n  all +0\.00 +41\.02  no job ran\n`, out.String())
	assert.Regexp(t, `\n  vultr +0\.00 +35\.04  no job ran\n`, out.String())
}

// Every Vultr VPC attach fails: the Manager gives up after 10 attempts per
// node and runs them without the VPC (VPCUnavailable events). The report's
// "faults met and survived" then says the opposite of what happened: "20 VPC
// attaches failed; each was retried until listing the server's VPCs
// confirmed it."
func TestReportDoesNotClaimGivenUpVPCAttachesConfirmed(t *testing.T) {
	var out bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		cfg, err := parseFlags([]string{"-plain", "-hotaisle-nodes", "0", "-interval", "1m"}, io.Discard)
		require.NoError(t, err)
		cfg.moreFaults = func(s *sims) error {
			return s.vultr.Inject(sim.Fault{Route: "POST /v2/bare-metals/{id}/vpcs/attach", Status: 500, Message: "Unable to attach VPC"})
		}
		_, err = quickstart(t.Context(), cfg, noEnv, &out)
		require.NoError(t, err)
	})
	require.Contains(t, out.String(), "VPCUnavailable", "the attaches were given up")
	assert.NotContains(t, out.String(), "retried until listing the server's VPCs confirmed it",
		"the report claims the given-up attaches were confirmed:\n%s", out.String()[max(0, len(out.String())-1500):])
}

// The same amounts summed in any order print the same total, rounded half
// a cent up: 52.56 + 5 x 1.495 is 60.035, printed 60.04 whether the Hot
// Aisle charges come first or last, and the provider rows (7.48, 52.56)
// add up to it.
func TestReportSumsMoneyExactlyWhateverTheOrder(t *testing.T) {
	var charges []charge
	for range 5 {
		charges = append(charges, charge{provider: fleet.ProviderHotAisle, id: "h", plan: "vm-mi300x-1", usd: 2.99 / 2, least: 2.99 / 2})
	}
	for range 3 {
		charges = append(charges, charge{provider: fleet.ProviderVultr, id: "v", plan: "vbm", usd: 17.52, least: 17.52})
	}
	reversed := slices.Clone(charges)
	slices.Reverse(reversed)
	for _, cs := range [][]charge{charges, reversed} {
		rep := &report{charges: cs, optimum: map[string]float64{"": 0, fleet.ProviderHotAisle: 0, fleet.ProviderVultr: 0}}
		for _, c := range cs { // the optimum summed in its own order
			rep.optimum[c.provider] += c.usd
			rep.optimum[""] += c.usd
		}
		var out bytes.Buffer
		rep.printBill(&out)
		assert.Regexp(t, `\n  all +total +60\.04 +60\.04  \+0\.0%\n`, out.String())
		assert.Regexp(t, `\n  hotaisle +total +7\.48 +7\.48  \+0\.0%\n`, out.String())
		assert.Regexp(t, `\n  all +60\.04 +60\.04  \+0\.0%\n`, out.String())
		assert.NotContains(t, out.String(), `"all" adds the unrounded amounts`, "7.48 + 52.56 is 60.04")
	}
	assert.Equal(t, "60.04", sumMicros(52.56, 1.495, 1.495, 1.495, 1.495, 1.495).String())
	assert.Equal(t, "60.04", sumMicros(1.495, 1.495, 1.495, 1.495, 1.495, 52.56).String())
	assert.Equal(t, "0.01", toMicros(0.005).String(), "half a cent up")
	assert.Equal(t, "-0.01", toMicros(-0.005).String())
	assert.Equal(t, "1.49", toMicros(1.494999).String())
}

// Provider rows that do not add up to the "all" row once rounded (7.475 and
// 1.005 print 7.48 and 1.01; their sum, 8.48) are said to be rounded, in
// both tables; the optimum is never printed above the bill of the same
// amounts.
func TestReportSaysWhenRoundedRowsDoNotAddUp(t *testing.T) {
	rep := &report{charges: []charge{
		{provider: fleet.ProviderHotAisle, usd: 7.475, least: 7.475},
		{provider: fleet.ProviderVultr, usd: 1.005, least: 1.005},
	}, optimum: map[string]float64{"": 8.48, fleet.ProviderHotAisle: 7.475, fleet.ProviderVultr: 1.005}}
	var out bytes.Buffer
	rep.printBill(&out)
	assert.True(t, rep.rounded())
	assert.Contains(t, out.String(), "  (rows are rounded to the cent; totals add the unrounded charges)\n")
	assert.Contains(t, out.String(), "\n  all           8.48     8.48  +0.0%\n")
	assert.Contains(t, out.String(), "\n  (rounded to the cent; \"all\" adds the unrounded amounts)\n")
}

// An optimum that could not be computed is said so, not left out.
func TestReportSaysWhenTheOptimumIsMissing(t *testing.T) {
	rep := &report{charges: []charge{{provider: fleet.ProviderVultr, usd: 17.52, least: 17.52}}}
	var out bytes.Buffer
	rep.printBill(&out)
	assert.Contains(t, out.String(), "bill beside the offline optimum for the same jobs")
	assert.Contains(t, out.String(), "not computed (see the errors below)")
}
