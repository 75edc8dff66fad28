package main

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func noEnv(string) string { return "" }

// inBubble runs f in a synctest bubble, where the in-memory fakes and the
// clients' rate limiters run on the bubble's clock: no real waiting.
func inBubble(t *testing.T, f func(t *testing.T)) { synctest.Test(t, f) }

// offers runs the command and returns its exit code, its table's data rows
// (the first line of each offer) and stderr.
func offers(t *testing.T, env func(string) string, args ...string) (int, []string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, env, &out, &errOut)
	var rows []string
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0][0] >= '0' && f[0][0] <= '9' && strings.Contains(l, "$") {
			rows = append(rows, l)
		}
	}
	return code, rows, errOut.String()
}

func TestMI300XWithEightGPUsUnder30Dollars(t *testing.T) { inBubble(t, testMI300X) }

func testMI300X(t *testing.T) {
	code, rows, stderr := offers(t, noEnv, "-gpu", "MI300X", "-count", "8", "-bare-metal", "any", "-max-price", "30")
	require.Equal(t, 0, code, stderr)
	require.Len(t, rows, 5, "Vultr bare metal in 3 regions, Hot Aisle 8x VM and bare metal")
	assert.Contains(t, rows[0], "vbm-256c-2048gb-8-mi300x-gpu", "cheapest first")
	assert.Contains(t, rows[0], "$17.52")
	assert.Contains(t, rows[3], "vm-mi300x-8")
	assert.Contains(t, rows[4], "bm-mi300x-8")
}

func TestFilters(t *testing.T) { inBubble(t, testFilters) }

func testFilters(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		n        int
		all, not string
	}{
		{[]string{"-gpu", "mi300x", "-bare-metal", "no"}, 4, "hotaisle", "vbm-"},
		{[]string{"-gpu", "MI300X", "-bare-metal", "yes"}, 4, "", "vm-mi300x"},
		{[]string{"-gpu", "MI300X", "-max-price", "10"}, 2, "hotaisle", "vultr"},
		{[]string{"-gpu", "MI300X", "-provider", "vultr", "-region", "ord"}, 1, "vultr (ord)", "hotaisle"},
		{[]string{"-vendor", "nvidia", "-count", "8", "-bare-metal", "yes"}, 1, "h100", "MI300X"},
		{[]string{"-gpu", "MI300X", "-count", "3"}, 0, "", ""},
	} {
		code, rows, stderr := offers(t, noEnv, tc.args...)
		require.Equal(t, 0, code, "%v: %s", tc.args, stderr)
		assert.Len(t, rows, tc.n, "%v", tc.args)
		for _, r := range rows {
			assert.Contains(t, r, tc.all, "%v", tc.args)
			if tc.not != "" {
				assert.NotContains(t, r, tc.not, "%v", tc.args)
			}
		}
	}
}

// TestNoMatchSaysWhichFlagToDrop: filters that match nothing are not an
// error, and the output says which flag, dropped alone, would match.
func TestNoMatchSaysWhichFlagToDrop(t *testing.T) { inBubble(t, testNoMatch) }

func testNoMatch(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"-gpu", "MI300X", "-count", "3", "-max-price", "20"}, noEnv, &out, &errOut)
	assert.Equal(t, 0, code, errOut.String())
	assert.Regexp(t, `^0 of \d+ offers match these filters.\n  without -count: 6\n$`, out.String())
}

// TestUnknownNamesAreNamedWithTheNearest: a region, GPU model or vendor
// that no offer has is a bad command line, named with the nearest known.
func TestUnknownNamesAreNamedWithTheNearest(t *testing.T) { inBubble(t, testUnknownNames) }

func testUnknownNames(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"-region", "nowhere"}, `offers: unknown region "nowhere"; nearest: ewr, nrt, ord`},
		{[]string{"-provider", "hotaisle", "-region", "us-michigan"}, `offers: unknown Hot Aisle region "us-michigan"; nearest: us-michigan-1`},
		{[]string{"-gpu", "mi300"}, `offers: unknown GPU model "mi300"; nearest: MI300X, `},
		{[]string{"-vendor", "intel"}, `offers: unknown GPU vendor "intel"; nearest: AMD, NVIDIA`},
	} {
		code, rows, stderr := offers(t, noEnv, tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Empty(t, rows)
		assert.Contains(t, stderr, tc.says)
	}
}

// TestListingFailedIsNotNoMatch: when no cloud answers, the program says
// the listing failed and exits 1; it does not say that nothing matched.
func TestListingFailedIsNotNoMatch(t *testing.T) {
	v, h := sim.NewVultr(), sim.NewHotAisle()
	require.NoError(t, v.Inject(sim.Fault{Route: sim.AnyRoute, Status: 500, Message: "Internal server error."}))
	require.NoError(t, h.Inject(sim.Fault{Route: sim.AnyRoute, Status: 500}))
	vs, hs := httptest.NewServer(v), httptest.NewServer(h)
	defer vs.Close()
	defer hs.Close()
	env := map[string]string{"VULTR_API_KEY": sim.DefaultAPIKey, "VULTR_BASE_URL": vs.URL + "/v2",
		"HOTAISLE_API_KEY": sim.DefaultAPIKey, "HOTAISLE_TEAM": sim.DefaultTeam, "HOTAISLE_BASE_URL": hs.URL + "/api"}
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"-real", "-gpu", "MI300X"}, func(k string) string { return env[k] }, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Empty(t, out.String(), "no table, no 'no offer matches'")
	assert.Contains(t, errOut.String(), "offers: listing offers failed: vultr: ")
	assert.Contains(t, errOut.String(), "hotaisle: ")
	assert.Contains(t, errOut.String(), "offers: no cloud answered")
}

func TestHelpSaysWhatTheProgramIs(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run(t.Context(), []string{"-h"}, noEnv, &out, &errOut))
	assert.True(t, strings.HasPrefix(errOut.String(), "offers lists what Vultr and Hot Aisle rent"), errOut.String())
}

func TestBadCommandLines(t *testing.T) {
	for _, args := range [][]string{{"-bare-metal", "maybe"}, {"-provider", "aws"}, {"-count", "-1"}, {"-max-price", "NaN"}, {"-max-price", "-5"}, {"-max-price", "+Inf"}, {"stray"}} {
		code, _, stderr := offers(t, noEnv, args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.NotEmpty(t, stderr, "%v", args)
	}
	code, _, stderr := offers(t, noEnv, "-real")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "VULTR_API_KEY")
}

// TestRealAgainstServedFakes points -real at the fakes served over HTTP,
// as a gpufleet-sim server would serve them.
func TestRealAgainstServedFakes(t *testing.T) {
	v, h := sim.NewVultr(), sim.NewHotAisle()
	vs, hs := httptest.NewServer(v), httptest.NewServer(h)
	defer vs.Close()
	defer hs.Close()
	env := map[string]string{"VULTR_API_KEY": sim.DefaultAPIKey, "VULTR_BASE_URL": vs.URL + "/v2",
		"HOTAISLE_API_KEY": sim.DefaultAPIKey, "HOTAISLE_TEAM": sim.DefaultTeam, "HOTAISLE_BASE_URL": hs.URL + "/api"}
	code, rows, stderr := offers(t, func(k string) string { return env[k] }, "-real", "-gpu", "MI300X", "-count", "8")
	require.Equal(t, 0, code, stderr)
	assert.Len(t, rows, 5)
	assert.NotEmpty(t, v.Calls())
	assert.NotEmpty(t, h.Calls())

	env["HOTAISLE_API_KEY"] = "wrong"
	code, rows, stderr = offers(t, func(k string) string { return env[k] }, "-real", "-gpu", "MI300X", "-count", "8")
	assert.Equal(t, 1, code, "one cloud refused the key")
	assert.Contains(t, stderr, "hotaisle")
	assert.NotContains(t, stderr, "wrong", "the key never reaches an error")
	assert.Len(t, rows, 3, "the other cloud's offers are still shown")
}
