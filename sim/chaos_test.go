package sim_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

// chaosRun drives a small orchestrator against a Vultr fake in chaos mode
// and returns the statuses it met (0: a transport error) and what fired.
func chaosRun(t *testing.T, seed uint64, profile sim.ChaosProfile) ([]int, []sim.FiredFault, *sim.Vultr) {
	var statuses []int
	var fired []sim.FiredFault
	var fake *sim.Vultr
	synctest.Test(t, func(t *testing.T) {
		v := sim.NewVultr(sim.WithVultrRateLimit(0, 0), sim.WithChaos(seed, profile))
		c := v.Client()
		call := func(method, path, body string) (int, []byte) {
			req, err := http.NewRequest(method, "https://api.vultr.com"+path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+sim.DefaultAPIKey)
			resp, err := c.Do(req)
			if err != nil {
				statuses = append(statuses, 0)
				return 0, nil
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				statuses = append(statuses, 0)
				return 0, nil
			}
			statuses = append(statuses, resp.StatusCode)
			return resp.StatusCode, data
		}
		for i := range 40 {
			label := fmt.Sprintf("node-%d", i)
			ensureServer(call, label)
			call("GET", "/v2/instances", "")
			call("GET", "/v2/regions/ewr/availability", "")
			time.Sleep(10 * time.Second)
		}
		fired, fake = v.Faults(), v
	})
	return statuses, fired, fake
}

// ensureServer is an orchestrator's create step: look the label up first,
// create, and after a failed create look again before retrying.
func ensureServer(call func(method, path, body string) (int, []byte), label string) {
	for range 20 {
		st, data := call("GET", "/v2/instances?label="+label, "")
		var list struct{ Instances []json.RawMessage }
		if st == 200 && json.Unmarshal(data, &list) == nil && len(list.Instances) > 0 {
			return
		}
		if st != 200 {
			time.Sleep(time.Second)
			continue
		}
		st, _ = call("POST", "/v2/instances", `{"region":"ewr","plan":"vc2-1c-1gb","os_id":1743,"label":"`+label+`"}`)
		if st == 202 {
			return
		}
		time.Sleep(time.Minute) // let a create that answered an error show up in lists
	}
}

// The same seed, profile and calls give the same faults; another seed
// others.
func TestChaosReplays(t *testing.T) {
	a, fa, _ := chaosRun(t, 11, sim.ChaosBadDay())
	b, fb, _ := chaosRun(t, 11, sim.ChaosBadDay())
	assert.Equal(t, a, b)
	assert.Equal(t, fa, fb)
	assert.NotEmpty(t, fa)
	c, fc, _ := chaosRun(t, 12, sim.ChaosBadDay())
	assert.False(t, assert.ObjectsAreEqual(a, c) && assert.ObjectsAreEqual(fa, fc), "another seed, other faults")
	for _, f := range fa {
		assert.True(t, f.Chaos)
	}
}

// The storm profile fires every kind of fault over a few hundred calls.
func TestChaosStormFiresEveryKind(t *testing.T) {
	_, fired, v := chaosRun(t, 5, sim.ChaosStorm())
	kinds := map[sim.FaultKind]int{}
	for _, f := range fired {
		kinds[f.Kind]++
	}
	for _, k := range []sim.FaultKind{sim.FaultStatus, sim.FaultReset, sim.FaultLatency, sim.FaultLag,
		sim.FaultCut, sim.FaultEmptyBody, sim.FaultErrorBody, sim.FaultRateLimit} {
		assert.Positive(t, kinds[k], "kind %s never fired: %v", k, kinds)
	}
	provider := false
	for _, f := range fired {
		provider = provider || strings.Contains(f.Message, "Plan is not available")
	}
	assert.True(t, provider, "a provider refusal fired")
	assert.NotEmpty(t, v.LiveResources(sim.KindInstance))
}

func TestChaosStartStop(t *testing.T) {
	h := sim.NewHotAisle()
	_, _, on := h.Chaos()
	assert.False(t, on)
	require.NoError(t, h.StartChaos(3, sim.ChaosProfile{Name: "always", ServerError: 1}))
	seed, got, on := h.Chaos()
	assert.True(t, on)
	assert.Equal(t, uint64(3), seed)
	assert.Equal(t, "always", got.Name)
	x := &haT{t: t, h: h, c: h.Client()}
	st, _ := x.do("GET", "/api/user/", nil)
	assert.GreaterOrEqual(t, st, 500)
	h.StopChaos()
	x.ok("GET", "/api/user/", nil, 200, nil)
	assert.Len(t, h.Faults(), 1)

	assert.Error(t, h.StartChaos(1, sim.ChaosProfile{ServerError: 0.9, Reset: 0.2}), "rates over 1 in total")
	assert.Panics(t, func() { sim.WithChaos(1, sim.ChaosProfile{Reset: -1}) })
	for _, n := range sim.ChaosProfileNames() {
		prof, ok := sim.ChaosProfileByName(n)
		require.True(t, ok)
		assert.Equal(t, n, prof.Name)
		assert.NoError(t, h.StartChaos(1, prof))
	}
	_, ok := sim.ChaosProfileByName("sunny")
	assert.False(t, ok)
}
