package sim_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

// tcpChaos is a profile without time-dependent faults (no slow calls,
// bursts or stale reads), so that a wall-clock server replays it too.
func tcpChaos() sim.ChaosProfile {
	return sim.ChaosProfile{Name: "t4", ServerError: 0.05, Reset: 0.15, CutBody: 0.05, EmptyBody: 0.05, ErrorBody: 0.05}
}

// chaosReads makes the same 120 reads through c against base and returns
// what the caller saw (status, or 0 for a transport or body error).
func chaosReads(t *testing.T, c *http.Client, base string) []int {
	var seen []int
	for i := range 120 {
		path := []string{"/v2/instances", "/v2/ssh-keys", "/v2/vpcs"}[i%3]
		req, err := http.NewRequest("GET", base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+sim.DefaultAPIKey)
		resp, err := c.Do(req)
		if err != nil {
			seen = append(seen, 0)
			continue
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			seen = append(seen, 0)
			continue
		}
		seen = append(seen, resp.StatusCode)
	}
	return seen
}

func firedFaults(v *sim.Vultr) []string {
	var out []string
	for _, f := range v.Faults() {
		out = append(out, fmt.Sprintf("%s %s %d", f.Route, f.Kind, f.Status))
	}
	return out
}

// The same seed and the same calls give the same faults in process and on a
// standalone server (gpufleet-sim serves the fake as an http.Handler over
// TCP). Over TCP, Go's client silently resends a GET whose reused
// connection was reset (an idempotent request that got no answer), which
// would shift every later draw of the route; once resets may be drawn, no
// connection is reused.
func TestChaosSameFaultsInProcessAndOverTCP(t *testing.T) {
	inproc := sim.NewVultr(sim.WithVultrRateLimit(0, 0), sim.WithChaos(7, tcpChaos()))
	a := chaosReads(t, inproc.Client(), "https://api.vultr.com")

	served := sim.NewVultr(sim.WithVultrRateLimit(0, 0), sim.WithChaos(7, tcpChaos()))
	srv := httptest.NewServer(served)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	b := chaosReads(t, client, srv.URL)

	assert.Equal(t, len(inproc.Calls()), len(served.Calls()), "the server saw as many calls as were made")
	assert.Equal(t, firedFaults(inproc), firedFaults(served), "the same faults fired")
	assert.Equal(t, a, b, "the caller saw the same answers")
	assert.True(t, strings.Contains(strings.Join(firedFaults(inproc), ","), "reset"), "the profile reset some calls")
}

// A rate that is not a number is not a rate from 0 to 1: StartChaos and
// WithChaos refuse it (accepted, every fault after it in the draw order
// would never fire, since u - NaN is NaN).
func TestChaosProfileNaNRateRefused(t *testing.T) {
	nan := func() float64 { z := 0.0; return z / z }()
	v := sim.NewVultr()
	assert.Error(t, v.StartChaos(1, sim.ChaosProfile{Name: "nan", ServerError: nan, Reset: 0.5}))
	assert.Panics(t, func() { sim.WithChaos(1, sim.ChaosProfile{Name: "nan", Slow: nan}) })
}
