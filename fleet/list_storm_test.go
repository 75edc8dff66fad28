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
func TestRefusedListingIsNotRetriedInATightLoop(t *testing.T) {
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

// A refusal that lasts (a revoked key) is asked again less and less often:
// the pause grows from Config.Interval to ten minutes, so an hour holds a
// handful of listings, and the refusal is still retried (a key restored
// at the cloud works again without a restart).
func TestRefusedListingBacksOffMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := sim.NewVultr()
		p := vultr.NewProvider(vultr.New("REVOKEDKEY0123456789REVOKEDKEY012345", vultr.WithHTTPClient(v.Client())))
		m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{p}, Owner: "tm"})
		require.NoError(t, err)
		defer m.Close()
		runFor(t, m, time.Hour)
		var at []time.Time
		for _, c := range v.Calls() {
			if c.Route == "GET /v2/instances" {
				at = append(at, c.Time)
			}
		}
		require.GreaterOrEqual(t, len(at), 5, "still retried")
		if !assert.LessOrEqual(t, len(at), 14, "10 s, 20 s, ... 10 min apart") {
			return
		}
		for i := 2; i < len(at); i++ {
			assert.GreaterOrEqual(t, at[i].Sub(at[i-1]), at[i-1].Sub(at[i-2]), "pauses never shrink")
		}
		assert.LessOrEqual(t, at[len(at)-1].Sub(at[len(at)-2]), 10*time.Minute+time.Second)
	})
}

// The same for the other parts of a listing: the instances list, but the
// key lacks the VPC or SSH key permission (403 on Vultr's GET /v2/vpcs,
// Hot Aisle's GET /api/user/ssh_keys/). Each part is retried on its own
// backoff; the instance listing goes on.
func TestRefusedVPCAndKeyListingsAreNotRetriedInATightLoop(t *testing.T) {
	for _, c := range []struct{ name, route, lists string }{
		{"vultr", "GET /v2/vpcs", "GET /v2/instances"},
		{"hotaisle", "GET /api/user/ssh_keys/", "GET /api/teams/{team}/virtual_machines/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var p fleet.Provider
				var fake interface {
					Calls() []sim.Call
					Inject(sim.Fault) error
				}
				if c.name == "hotaisle" {
					h := sim.NewHotAisle()
					fake = h
					p = hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
				} else {
					v := sim.NewVultr()
					fake = v
					p = vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client())))
				}
				require.NoError(t, fake.Inject(sim.Fault{Route: c.route, Status: 403}))
				m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{p}, Owner: "tm"})
				require.NoError(t, err)
				defer m.Close()
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() { defer close(done); _ = m.Run(ctx) }()
				time.Sleep(10 * time.Minute)
				cancel()
				<-done
				refused := calls(fake.Calls(), c.route, 403)
				require.NotZero(t, refused)
				assert.LessOrEqual(t, refused, 8, "refused %s calls in 10 min", c.route)
				assert.LessOrEqual(t, calls(fake.Calls(), c.lists, 0), 70, "instance listings in 10 min")
			})
		})
	}
}

// A listing that fails at once for a while (HTTP 503 without client
// retries) while a fleet runs: retried every Config.Interval at most, up
// to a minute apart; once the API answers again the fleet is watched as
// before.
func TestFailingListingDuringAnOutageIsPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := sim.NewVultr()
		p := vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client()), vultr.WithRetry(1, time.Second, time.Second)))
		m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{p}, Owner: "tm"})
		require.NoError(t, err)
		defer m.Close()
		require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: 1, Requirements: vultrType(vm)}))
		runFor(t, m, 10*time.Minute)
		require.Len(t, m.Instances("f"), 1)
		require.Equal(t, fleet.StatusIdle, m.Instances("f")[0].Status)
		before := len(v.Calls())
		require.NoError(t, v.Inject(sim.Fault{Route: "GET /v2/instances", Status: 503, Duration: 20 * time.Minute}))
		require.NoError(t, v.Inject(sim.Fault{Route: "GET /v2/instances/{id}", Status: 503, Duration: 20 * time.Minute}))
		runFor(t, m, 20*time.Minute)
		failed := calls(v.Calls()[before:], "GET /v2/instances", 503)
		assert.LessOrEqual(t, failed, 30, "failed listings in a 20-minute outage")
		runFor(t, m, 10*time.Minute)
		assert.Equal(t, fleet.StatusIdle, m.Instances("f")[0].Status)
		assert.Positive(t, calls(v.Calls()[before:], "GET /v2/instances", 200), "listed again after the outage")
	})
}

// A VPC create that answered ambiguously (HTTP 500, nothing created) is
// looked up by label in the VPC listings until Policy.CreateLookupGrace:
// every 30 s, not at every loop step (each answer wakes the loop).
func TestUncertainVPCCreateIsLookedUpAtAPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "POST /v2/vpcs", Status: 500, Times: 1}))
		m := e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp}, Owner: testOwner})
		require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: "cl", Nodes: 2, Placement: fleet.PlacementCluster,
			Requirements: fleet.Requirements{Providers: []string{"vultr"}, InstanceTypes: []string{"vc2-2c-4gb"}, Regions: []string{"ewr"}}}))
		runFor(t, m, 20*time.Minute)
		require.Equal(t, 1, e.count(fleet.EventCreateUncertain), "the VPC create answered 500")
		assert.LessOrEqual(t, calls(e.vultr.Calls(), "GET /v2/vpcs", 0), 40, "VPC listings in 20 min")
		assert.Equal(t, 1, live(e.vultr.Resources(), "vpc"), "the fleet got its VPC in the end")
		assert.Equal(t, 2, e.liveServers())
	})
}

// A create refused with HTTP 429 (or given up before it was sent) says
// nothing of the offer, so the same create is planned again: not at once
// (each refusal wakes the loop), but after Config.Interval, more for
// refusals in a row, and never before the Retry-After.
func TestRateLimitedCreateIsNotRetriedInATightLoop(t *testing.T) {
	for _, c := range []struct {
		name, route string
		req         fleet.Requirements
	}{
		{"vultr", "POST /v2/instances", vultrType(vm)},
		{"hotaisle", "POST /api/teams/{team}/virtual_machines/", hotType("vm-mi300x-1")},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				p, fake := fleet.Provider(e.vp), interface {
					Calls() []sim.Call
					Inject(sim.Fault) error
				}(e.vultr)
				if c.name == "hotaisle" {
					p, fake = e.hp, e.hot
				}
				require.NoError(t, fake.Inject(sim.Fault{Route: c.route, Status: 429, Duration: 5 * time.Minute}))
				m := e.managerWith(fleet.Config{Providers: []fleet.Provider{p}, Owner: testOwner})
				require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: 1, Requirements: c.req}))
				runFor(t, m, 10*time.Minute)
				refused := calls(fake.Calls(), c.route, 429)
				require.NotZero(t, refused)
				assert.LessOrEqual(t, refused, 12, "creates refused with 429 in 5 min")
				assert.Equal(t, 1, e.liveServers(), "created once the API takes creates again")
			})
		})
	}
}
