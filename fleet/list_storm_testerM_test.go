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

// A provider whose listing is refused at once (a wrong or revoked API key:
// HTTP 401, not retried by the client) is listed again as soon as the
// answer comes back, for ever: Run lists it at the client's full rate
// limit (Hot Aisle 10/s, Vultr 30/s) and emits one ProviderUnavailable
// event per listing, with no fleet applied at all. Config.Interval says it
// is "the pause between listings of a provider that has work in flight
// (default 10 s)": 10 minutes allow ~60 listings; a cloud answering
// thousands of unauthorized calls per minute may lock the account, and the
// event stream drowns every other event.
func TestTesterMRefusedListingIsNotRetriedInATightLoop(t *testing.T) {
	for _, c := range []struct {
		name  string
		route string
	}{
		{"hotaisle", "GET /api/teams/{team}/virtual_machines/"},
		{"vultr", "GET /v2/instances"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var p fleet.Provider
				var fake interface{ Calls() []sim.Call }
				if c.name == "hotaisle" {
					h := sim.NewHotAisle()
					fake = h
					p = hotaisle.NewProvider(hotaisle.New("revoked-key-0123456789", sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
				} else {
					v := sim.NewVultr()
					fake = v
					p = vultr.NewProvider(vultr.New("REVOKEDKEY0123456789REVOKEDKEY012345", vultr.WithHTTPClient(v.Client())))
				}
				var mu sync.Mutex
				unavailable := 0
				m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{p}, Owner: "tm",
					OnEvent: func(ev fleet.Event) {
						if ev.Type == fleet.EventProviderUnavailable {
							mu.Lock()
							unavailable++
							mu.Unlock()
						}
					}})
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() { defer close(done); _ = m.Run(ctx) }()
				time.Sleep(10 * time.Minute)
				cancel()
				<-done
				m.Close()
				lists := calls(fake.Calls(), c.route, 401)
				require.NotZero(t, lists, "the listing is refused")
				assert.LessOrEqual(t, lists, 70, "unauthorized listings in 10 min (Interval 10 s allows ~60)")
				mu.Lock()
				assert.LessOrEqual(t, unavailable, 70, "ProviderUnavailable events in 10 min")
				mu.Unlock()
			})
		})
	}
}
