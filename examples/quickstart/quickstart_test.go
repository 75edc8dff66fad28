package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func noEnv(string) string { return "" }

// quickstartInBubble runs the quickstart with args inside a synctest
// bubble: the scaled clock reads the bubble's clock, so every wall-time wait
// (passes, client backoff, SSH retries) takes no real time and the run is
// the same whatever the machine's load.
func quickstartInBubble(t *testing.T, args ...string) (*report, string) {
	t.Helper()
	var rep *report
	var out bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		cfg, err := parseFlags(append([]string{"-plain"}, args...), io.Discard)
		require.NoError(t, err)
		rep, err = quickstart(t.Context(), cfg, noEnv, &out)
		require.NoError(t, err)
	})
	require.NotNil(t, rep)
	return rep, out.String()
}

// assertWithin5Percent checks each provider's bill and the total against
// the least each instance could cost and against the offline optimum for
// the same jobs.
func assertWithin5Percent(t *testing.T, rep *report) {
	t.Helper()
	assert.True(t, rep.optimumProven, "the optimum is proven")
	for _, p := range []string{fleet.ProviderVultr, fleet.ProviderHotAisle, ""} {
		charged, least := rep.bill(p)
		require.Positive(t, least, p)
		assert.GreaterOrEqual(t, charged, least-0.005, "%s: never below the least for each instance", p)
		assert.LessOrEqual(t, charged, least*1.05, "%s: charged %.2f, least for each instance %.2f", p, charged, least)
		opt := rep.optimum[p]
		require.Positive(t, opt, p)
		assert.LessOrEqual(t, opt, least+0.005, "%s: the optimum is never above the least for each instance", p)
		assert.GreaterOrEqual(t, charged, opt-0.005, "%s: never below the offline optimum", p)
		assert.LessOrEqual(t, charged, opt*1.05, "%s: charged %.2f, offline optimum %.2f", p, charged, opt)
	}
}

func TestQuickstartMeetsEveryFaultLeaksNothingAndBillsNearTheLeast(t *testing.T) {
	rep, out := quickstartInBubble(t)
	assert.Empty(t, rep.errs)
	assert.Empty(t, rep.leaked)
	assert.True(t, rep.ok())
	assert.Equal(t, 4, rep.created, "2 Vultr bare metal, 2 Hot Aisle VMs; the sold-out create made nothing")
	assert.Equal(t, 4, rep.terminated)
	for _, f := range []struct{ provider, name string }{
		{fleet.ProviderVultr, "sold out"},
		{fleet.ProviderVultr, "VPC attach failed"},
		{fleet.ProviderVultr, "server locked"},
		{fleet.ProviderVultr, "not currently active"},
		{fleet.ProviderHotAisle, "minimum reservation"},
	} {
		assert.Positive(t, rep.fault(f.provider, f.name), "%s %s met", f.provider, f.name)
	}
	assert.Equal(t, map[string]int{fleet.ProviderVultr: 2, fleet.ProviderHotAisle: 2}, rep.deferred,
		"every release waited for its reservation window")
	assertWithin5Percent(t, rep)
	charged, least := rep.bill(fleet.ProviderVultr)
	assert.InDelta(t, 2*17.52, charged, 0.001, "one hour per node: released inside the first paid hour")
	assert.InDelta(t, charged, least, 0.001)
	assert.InDelta(t, charged, rep.optimum[fleet.ProviderVultr], 0.001, "the optimum also needs two machines for an hour")
	assert.Contains(t, out, "bill beside the offline optimum for the same jobs (the cost benchmark's measure")
	assert.Regexp(t, `\n  all +38\.03 +38\.03  \+0\.0%\n`, out)
	for _, c := range rep.calls {
		assert.Positive(t, c.total, c.provider)
	}
	assert.Contains(t, out, "OfferSkipped")
	assert.Contains(t, out, idLegend)
	assert.Regexp(t, `InstanceCreated +train vultr [0-9a-f]{12} → 8707a01d-6329-`, out, "events link request and provider ids")
	assert.Regexp(t, `\n  vultr +[0-9a-f]{12} → 8707a01d… +vbm-`, out, "so does the bill")
	assert.Contains(t, out, "\n  hotaisle  2 releases waited for the end of the minimum reservation (paid anyway).\n")
	assert.Contains(t, out, "\n  vultr     1 create refused as sold out; the next offer was taken.\n")
	assert.Contains(t, out, "  (rows are rounded to the cent; totals add the unrounded charges)\n",
		"two 1.495 rows print as 1.50 beside a total of 2.99")
	assert.Contains(t, out, "FleetDeleted          train")
	assert.Contains(t, out, "FleetDeleted          infer")
	assert.True(t, strings.HasSuffix(out, "leaked: 0\n"), out[max(0, len(out)-300):])
}

func TestQuickstartWithHotAisleBareMetal(t *testing.T) {
	if testing.Short() {
		t.Skip("eight hours of cloud time")
	}
	rep, out := quickstartInBubble(t, "-bare-metal", "-interval", "30s")
	assert.Empty(t, rep.errs)
	assert.Empty(t, rep.leaked)
	assert.Equal(t, 5, rep.created)
	assert.Equal(t, 3, rep.deferred[fleet.ProviderHotAisle], "bare metal waits for its 8 prepaid hours")
	assertWithin5Percent(t, rep)
	assert.Contains(t, out, "FleetDeleted          metal")
}

func TestReportSentencesAndRounding(t *testing.T) {
	assert.Equal(t, "1 release waited for the end of the minimum reservation (paid anyway); 2 were refused before it ended, and retried.",
		minimumSentence(2, 1, 0, outcome{ok: 1}))
	assert.Equal(t, "1 VPC attach failed; each was retried until listing the server's VPCs confirmed it.", faults[1].say(1, outcome{ok: 1}))
	rep := &report{charges: []charge{{provider: "vultr", usd: 17.52}, {provider: "vultr", usd: 17.52}}}
	assert.False(t, rep.rounded(), "rows add up to the total")
	rep.charges = append(rep.charges, charge{provider: "hotaisle", usd: 1.495}, charge{provider: "hotaisle", usd: 1.495})
	assert.True(t, rep.rounded(), "1.50 + 1.50 beside 2.99")
}

func TestBillingRules(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		provider   string
		used, min  time.Duration
		billed     time.Duration
		usdPerHour float64
		wantUSD    float64
	}{
		{fleet.ProviderVultr, 0, 0, time.Hour, 17.52, 17.52},
		{fleet.ProviderVultr, 59 * time.Minute, 0, time.Hour, 17.52, 17.52},
		{fleet.ProviderVultr, 61 * time.Minute, 0, 2 * time.Hour, 17.52, 35.04},
		{fleet.ProviderHotAisle, 10 * time.Minute, 30 * time.Minute, 30 * time.Minute, 2.99, 1.495},
		{fleet.ProviderHotAisle, 30*time.Minute + time.Second, 30 * time.Minute, 31 * time.Minute, 2.99, 2.99 * 31 / 60},
		{fleet.ProviderHotAisle, 40 * time.Minute, 480 * time.Minute, 8 * time.Hour, 27.12, 216.96},
	} {
		billed, usd := billedUSD(tc.provider, tc.usdPerHour, t0, t0.Add(tc.used), tc.min)
		assert.Equal(t, tc.billed, billed, "%s %s", tc.provider, tc.used)
		assert.InDelta(t, tc.wantUSD, usd, 1e-9, "%s %s", tc.provider, tc.used)
	}
}

// TestQuickstartListsWhatLeaksAndFails makes every Vultr bare-metal DELETE
// fail: the run overruns, the teardown gives up, and the report must list
// both servers and their VPC as leaked, with exit code 1.
func TestQuickstartListsWhatLeaksAndFails(t *testing.T) {
	var rep *report
	var out bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		cfg, err := parseFlags([]string{"-plain", "-hotaisle-nodes", "0", "-interval", "1m"}, io.Discard)
		require.NoError(t, err)
		cfg.moreFaults = func(s *sims) error {
			return s.vultr.Inject(sim.Fault{Route: "DELETE /v2/bare-metals/{id}", Status: 500, Message: "Internal server error."})
		}
		rep, err = quickstart(t.Context(), cfg, noEnv, &out)
		require.NoError(t, err)
		assert.Equal(t, 1, exitCode(t.Context(), rep))
	})
	require.NotNil(t, rep)
	assert.False(t, rep.ok())
	assert.Len(t, rep.leaked, 3, "two servers and the VPC that cannot go before them")
	assert.Contains(t, out.String(), "TerminationStuck")
	assert.Contains(t, out.String(), "teardown did not finish")
	assert.Contains(t, out.String(), "leaked: 3\n  bare_metal ")
	assert.Contains(t, out.String(), "NOT all survived")
}
