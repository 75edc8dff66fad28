package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/require"
)

// a create whose answer is cut after a few bytes took effect (the
// server exists); the client reads an unexpected EOF. The Manager must find
// that server by its label and not create a second one.

func t2liveOf(rs []sim.Resource, kinds ...string) int {
	n := 0
	for _, r := range rs {
		for _, k := range kinds {
			if r.Live() && string(r.Kind) == k {
				n++
			}
		}
	}
	return n
}

func runCutCreate(t *testing.T, p fleet.Provider, live func() int, req fleet.Requirements) {
	ctx := t.Context()
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{p}})
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Apply(ctx, fleet.Spec{Name: "cut", Nodes: 1, Requirements: req}))
	for range 60 { // 30 cloud minutes
		require.NoError(t, m.Reconcile(ctx))
		time.Sleep(30 * time.Second)
	}
	require.Equal(t, 1, live(), "servers live for a 1-node fleet after a create cut short")
	require.NoError(t, m.Delete(ctx, "cut"))
	for range 120 {
		require.NoError(t, m.Reconcile(ctx))
		time.Sleep(30 * time.Second)
	}
	require.Equal(t, 0, live(), "servers left after Delete")
}

func TestVultrCreateBodyCut(t *testing.T) {
	for _, cut := range []int{1, 17, 200} {
		synctest.Test(t, func(t *testing.T) {
			vs := sim.NewVultr()
			require.NoError(t, vs.Inject(sim.Fault{Route: "POST /v2/instances", CutAfter: cut, Times: 1}))
			vc := vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(vs.Client()), vultr.WithRateLimit(0, 0))
			runCutCreate(t, vultr.NewProvider(vc), func() int { return t2liveOf(vs.Resources(), "instance") },
				fleet.Requirements{InstanceTypes: []string{"vcg-a100-3c-30g-20vram"}, Regions: []string{"ewr"}})
			require.Len(t, vs.Faults(), 1, "the cut fired")
		})
	}
}

func TestHotAisleCreateBodyCut(t *testing.T) {
	for _, cut := range []int{1, 17, 200} {
		synctest.Test(t, func(t *testing.T) {
			hs := sim.NewHotAisle()
			require.NoError(t, hs.Inject(sim.Fault{Route: "POST /api/teams/{team}/virtual_machines/", CutAfter: cut, Times: 1}))
			hc := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(hs.Client()), hotaisle.WithRateLimit(0, 0))
			runCutCreate(t, hotaisle.NewProvider(hc), func() int { return t2liveOf(hs.Resources(), "virtual_machine") },
				fleet.Requirements{GPUModel: "MI300X", GPUCount: 1})
			require.Len(t, hs.Faults(), 1, "the cut fired")
		})
	}
}
