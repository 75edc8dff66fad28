package fleet_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A wrong or revoked Vultr key does not stop a fleet only Hot Aisle can
// serve (tester AA): a provider whose catalog has no offer the fleet could
// use is not waited for before creating (listedFor), and a listing refused
// for the key raises one CreatesRefused alert, as a refused create does
// (README: "An account-level refusal ... holds that provider's creates with
// backoff and one alert"). Before, nothing was created in 2 hours and the
// only events were ProviderUnavailable warnings.
func TestWrongKeyOnOneProviderLeavesTheOtherServing(t *testing.T) {
	req := fleet.Requirements{GPUModel: "MI300X", GPUCount: 1}
	synctest.Test(t, func(t *testing.T) {
		v, h := sim.NewVultr(), sim.NewHotAisle()
		vp := vultr.NewProvider(vultr.New("WRONGKEY0123456789WRONGKEY0123456789", vultr.WithHTTPClient(v.Client())))
		hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
		var mu sync.Mutex
		counts := map[fleet.EventType]int{}
		m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{vp, hp}, Owner: "aa",
			OnEvent: func(e fleet.Event) { mu.Lock(); counts[e.Type]++; mu.Unlock() }})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = m.Run(ctx) }()

		require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: "infer", Nodes: 1, Requirements: req}))
		time.Sleep(2 * time.Hour)

		live := len(h.LiveResources(sim.KindVirtualMachine))
		mu.Lock()
		t.Logf("after 2 h: Hot Aisle VMs live %d; events %v", live, counts)
		alerts := counts[fleet.EventCreatesRefused]
		mu.Unlock()
		assert.Equal(t, 1, live, "the Hot Aisle VM serving the fleet (the Vultr key is wrong, the Hot Aisle one right)")
		assert.Equal(t, 1, alerts, "one alert naming Vultr's refusal of the key")

		require.NoError(t, m.Delete(t.Context(), "infer", fleet.WithReleasePolicy(fleet.ReleaseNow)))
		time.Sleep(30 * time.Minute)
		cancel()
		<-done
		m.Close()
		time.Sleep(time.Hour)
	})
}
