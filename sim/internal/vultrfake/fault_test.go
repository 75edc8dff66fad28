package vultrfake

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timed sends a request and returns the status and how much (bubble) time
// it took.
func (h *vultrT) timed(method, path string, body any) (int, time.Duration) {
	h.t.Helper()
	start := time.Now()
	st, _, _ := h.do(method, path, body)
	return st, time.Since(start)
}

func TestFaultLatencyFixedAndSeeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		require.NoError(t, h.v.Inject(core.Fault{Route: "GET /v2/regions", Times: 1, Latency: 3 * time.Second}))
		st, d := h.timed("GET", "/v2/regions", nil)
		assert.Equal(t, 200, st, "a delay alone changes no answer")
		assert.Equal(t, 3*time.Second, d)
		_, d = h.timed("GET", "/v2/regions", nil)
		assert.Zero(t, d, "Times: 1 used up")
		f := h.v.Faults()
		require.Len(t, f, 1)
		assert.Equal(t, core.FaultLatency, f[0].Kind)
		assert.Equal(t, 3*time.Second, f[0].Delay)
		assert.Equal(t, "GET /v2/regions", f[0].Route)

		delays := func(seed uint64) []time.Duration {
			x := newVultrT(t, WithSeed(seed))
			require.NoError(t, x.v.Inject(core.Fault{Route: core.AnyRoute, Latency: time.Second, LatencyMax: 5 * time.Second}))
			var out []time.Duration
			for range 6 {
				_, d := x.timed("GET", "/v2/plans", nil)
				assert.GreaterOrEqual(t, d, time.Second)
				assert.LessOrEqual(t, d, 5*time.Second)
				out = append(out, d)
			}
			return out
		}
		a := delays(7)
		assert.Equal(t, a, delays(7), "the same seed replays the same delays")
		assert.NotEqual(t, a, delays(8))
	})
}

// A slow create the client gave up on still takes effect.
func TestFaultLatencyOutlivesTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		require.NoError(t, h.v.Inject(core.Fault{Route: "POST /v2/instances", Times: 1, Latency: time.Minute}))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "POST", "https://api.vultr.com/v2/instances",
			strings.NewReader(`{"region":"ewr","plan":"vc2-1c-1gb","os_id":1743,"label":"late"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+DefaultAPIKey)
		_, err = h.c.Do(req)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Empty(t, h.v.LiveResources(core.KindInstance))
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Len(t, h.v.LiveResources(core.KindInstance), 1, "the create landed after the client gave up")
	})
}

func TestFaultCutBody(t *testing.T) {
	h := newVultrT(t)
	require.NoError(t, h.v.Inject(core.Fault{Route: "GET /v2/plans", Times: 2, CutAfter: 10}))
	read := func(c *http.Client, base string) (int, string, error) {
		req, err := http.NewRequest("GET", base+"/v2/plans", nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data), err
	}
	st, body, err := read(h.c, "https://api.vultr.com")
	assert.Equal(t, 200, st)
	assert.Equal(t, `{"plans":`, body[:9])
	assert.Len(t, body, 10)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "in memory")

	srv := httptest.NewServer(h.v)
	defer srv.Close()
	st, body, err = read(srv.Client(), srv.URL)
	assert.Equal(t, 200, st)
	assert.Len(t, body, 10)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "over HTTP")

	st, body, err = read(h.c, "https://api.vultr.com")
	require.NoError(t, err, "Times: 2 used up")
	assert.Equal(t, 200, st)
	assert.Greater(t, len(body), 1000)
	f := h.v.Faults()
	require.Len(t, f, 2)
	assert.Equal(t, core.FaultCut, f[0].Kind)
	assert.True(t, f[0].Commit)
}

// A cut create answer still creates the server.
func TestFaultCutCreateCommits(t *testing.T) {
	h := newVultrT(t)
	require.NoError(t, h.v.Inject(core.Fault{Route: "POST /v2/instances", Times: 1, CutAfter: 5}))
	req, err := http.NewRequest("POST", "https://api.vultr.com/v2/instances",
		strings.NewReader(`{"region":"ewr","plan":"vc2-1c-1gb","os_id":1743}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+DefaultAPIKey)
	resp, err := h.c.Do(req)
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, 202, resp.StatusCode)
	assert.Len(t, h.v.LiveResources(core.KindInstance), 1)
}

func TestFaultEmptyAndErrorBodies(t *testing.T) {
	h := newVultrT(t)
	require.NoError(t, h.v.Inject(core.Fault{Route: "GET /v2/instances", Times: 1, EmptyBody: true}))
	st, data, hdr := h.do("GET", "/v2/instances", nil)
	assert.Equal(t, 200, st)
	assert.Empty(t, data)
	assert.Equal(t, "application/json", hdr.Get("Content-Type"))

	body := map[string]any{"region": "ewr", "plan": "vc2-1c-1gb", "os_id": 1743}
	require.NoError(t, h.v.Inject(core.Fault{Route: "POST /v2/instances", Times: 1, Status: 202, Message: "Unable to create server."}))
	st, data, _ = h.do("POST", "/v2/instances", body)
	assert.Equal(t, 202, st)
	assert.JSONEq(t, `{"error":"Unable to create server.","status":500}`, string(data))
	assert.Empty(t, h.v.LiveResources(core.KindInstance), "the error body came before the create")

	require.NoError(t, h.v.Inject(core.Fault{Route: "POST /v2/instances", Times: 1, Status: 200, AfterCommit: true}))
	st, data, _ = h.do("POST", "/v2/instances", body)
	assert.Equal(t, 200, st)
	assert.JSONEq(t, `{"error":"Internal server error.","status":500}`, string(data))
	assert.Len(t, h.v.LiveResources(core.KindInstance), 1, "AfterCommit: the create happened")

	var kinds []core.FaultKind
	for _, f := range h.v.Faults() {
		kinds = append(kinds, f.Kind)
	}
	assert.Equal(t, []core.FaultKind{core.FaultEmptyBody, core.FaultErrorBody, core.FaultErrorBody}, kinds)
	assert.Equal(t, "Internal server error.", h.v.Faults()[2].Message, "the provider's text, as sent")
}

// A fault with a Probability fires on a seeded share of the calls, the
// same calls on a replay.
func TestFaultProbabilityReplays(t *testing.T) {
	pattern := func(seed uint64) []int {
		h := newVultrT(t, WithSeed(seed))
		require.NoError(t, h.v.Inject(core.Fault{Route: "GET /v2/regions", Probability: 0.3, Status: 503}))
		var out []int
		for range 200 {
			st, _, _ := h.do("GET", "/v2/regions", nil)
			out = append(out, st)
			h.do("GET", "/v2/plans", nil) // other routes do not shift the draws
		}
		return out
	}
	a := pattern(3)
	n := 0
	for _, st := range a {
		if st == 503 {
			n++
		}
	}
	assert.InDelta(t, 60, n, 20)
	assert.Equal(t, a, pattern(3))
	assert.NotEqual(t, a, pattern(4))
}

// Every matching fault adds its delay; the first with an answer answers.
func TestFaultsCombine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		require.NoError(t, h.v.Inject(core.Fault{Route: core.AnyRoute, Latency: time.Second, Times: 1}))
		require.NoError(t, h.v.Inject(core.Fault{Route: "GET /v2/plans", Status: 502, Times: 1}))
		require.NoError(t, h.v.Inject(core.Fault{Route: "GET /v2/plans", Status: 504, Times: 1}))
		st, d := h.timed("GET", "/v2/plans", nil)
		assert.Equal(t, 502, st)
		assert.Equal(t, time.Second, d)
		st, _ = h.timed("GET", "/v2/plans", nil)
		assert.Equal(t, 504, st, "the second answer fault waited its turn")
		assert.Empty(t, h.v.ArmedFaults())
	})
}

func TestFaultValidation(t *testing.T) {
	v := NewVultr()
	err := v.Inject(core.Fault{Route: "GET /v2/nothing"})
	assert.ErrorIs(t, err, core.ErrUnknownRoute)
	for _, f := range []core.Fault{
		{Route: core.AnyRoute, Times: -1}, {Route: core.AnyRoute, Probability: 1.5}, {Route: core.AnyRoute, CutAfter: -1},
		{Route: core.AnyRoute, Latency: -time.Second}, {Route: core.AnyRoute, Latency: 2 * time.Second, LatencyMax: time.Second},
		{Route: core.AnyRoute, CutAfter: 3, Status: 500}, {Route: core.AnyRoute, Status: 302},
	} {
		assert.Error(t, v.Inject(f), "%+v", f)
	}
	require.NoError(t, v.Inject(core.Fault{Route: core.AnyRoute, EmptyBody: true}))
	require.NoError(t, v.Inject(core.Fault{Route: core.AnyRoute, Latency: time.Second}))
	require.NoError(t, v.Inject(core.Fault{Route: core.AnyRoute}))
	armed := v.ArmedFaults()
	require.Len(t, armed, 3)
	assert.Equal(t, 200, armed[0].Status, "EmptyBody defaults to 200")
	assert.Zero(t, armed[1].Status, "a pure delay answers nothing")
	assert.Equal(t, 500, armed[2].Status, "a bare fault is a 500")
	assert.False(t, errors.Is(v.Inject(core.Fault{Route: core.AnyRoute}), core.ErrUnknownRoute))
}

func TestNamedTransportFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		require.NoError(t, h.v.RateLimitBurst(2*time.Second, 0))
		st, _, hdr := h.do("GET", "/v2/regions", nil)
		assert.Equal(t, 429, st)
		assert.Equal(t, "1", hdr.Get("Retry-After"))
		time.Sleep(2 * time.Second)
		st, _, _ = h.do("GET", "/v2/regions", nil)
		assert.Equal(t, 200, st)
		assert.Error(t, h.v.RateLimitBurst(0, time.Second))

		require.NoError(t, h.v.SlowAnswers(time.Second, 3*time.Second, time.Minute))
		_, d := h.timed("GET", "/v2/plans", nil)
		assert.GreaterOrEqual(t, d, time.Second)
		assert.LessOrEqual(t, d, 3*time.Second)
		time.Sleep(time.Minute)
		_, d = h.timed("GET", "/v2/plans", nil)
		assert.Zero(t, d)

		id := h.create("vc2-1c-1gb", "ewr", nil)["id"].(string)
		require.NoError(t, h.v.StaleReads(time.Minute, 0))
		h.fail("GET", "/v2/instances/"+id, nil, 404)
		h.v.ClearFaults()
		h.get(id, false)
		assert.Error(t, h.v.StaleReads(0, 0))
	})
}
