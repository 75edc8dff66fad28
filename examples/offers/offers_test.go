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
		if f := strings.Fields(l); len(f) > 0 && f[0] != "#" && f[0][0] >= '0' && f[0][0] <= '9' {
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
		{[]string{"-gpu", "B200"}, 0, "", ""},
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

func TestBadCommandLines(t *testing.T) {
	for _, args := range [][]string{{"-bare-metal", "maybe"}, {"-provider", "aws"}, {"-count", "-1"}, {"stray"}} {
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
