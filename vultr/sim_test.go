package vultr_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Behaviour against the Vultr fake (in memory). Everything timed runs in a
// synctest bubble, where the fake's minutes pass in microseconds.

func newSim(t *testing.T, opts ...vultr.Option) (*sim.Vultr, *vultr.Client) {
	t.Helper()
	v := sim.NewVultr()
	c := vultr.New(sim.DefaultAPIKey, append([]vultr.Option{vultr.WithHTTPClient(v.Client())}, opts...)...)
	return v, c
}

func createVM(t *testing.T, c *vultr.Client, label string, vpcs ...string) *vultr.Instance {
	t.Helper()
	inst, err := c.CreateInstance(t.Context(), &vultr.InstanceCreate{Region: "ewr", Plan: "vcg-a100-3c-30g-20vram",
		Label: label, OSID: 1743, Tags: []string{"gpufleet"}, UserData: []byte("#cloud-config\n"), AttachVPC: vpcs})
	require.NoError(t, err)
	return inst
}

func TestSimInstanceLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, c := newSim(t)
		ctx := t.Context()
		inst := createVM(t, c, "fleet-a-0")
		assert.Equal(t, "pending", inst.Status)
		assert.NotEmpty(t, string(inst.DefaultPassword), "create answer carries the password")
		_, ok := inst.PublicIP()
		assert.False(t, ok, "no address while pending")

		// S01: a delete seconds after create is refused as not active.
		time.Sleep(5 * time.Second)
		err := c.DeleteInstance(ctx, inst.ID)
		assert.ErrorIs(t, err, fleet.ErrNotActive)

		time.Sleep(85 * time.Second) // 90 s after create
		got, err := c.GetInstance(ctx, inst.ID)
		require.NoError(t, err)
		assert.Equal(t, "active", got.Status)
		ip, ok := got.PublicIP()
		assert.True(t, ok)
		assert.NotEqual(t, "0.0.0.0", ip)
		assert.Equal(t, "fleet-a-0", got.Label)
		assert.Equal(t, []string{"gpufleet"}, got.Tags)
		assert.False(t, got.DateCreated.IsZero())

		// S02: locked for minutes after becoming active; not retried.
		before := len(v.Calls())
		time.Sleep(2 * time.Minute)
		assert.ErrorIs(t, c.DeleteInstance(ctx, inst.ID), fleet.ErrLocked)
		assert.Len(t, v.Calls(), before+1, "a domain refusal is not retried")

		time.Sleep(4 * time.Minute)
		require.NoError(t, c.DeleteInstance(ctx, inst.ID))
		time.Sleep(61 * time.Second)
		_, err = c.GetInstance(ctx, inst.ID)
		assert.ErrorIs(t, err, fleet.ErrNotFound)
		assert.ErrorIs(t, c.DeleteInstance(ctx, inst.ID), fleet.ErrNotFound, "already gone")
	})
}

func TestSimUserDataIsBase64OfTheRawBytes(t *testing.T) {
	v, c := newSim(t)
	inst := createVM(t, c, "ud")
	req, _ := http.NewRequestWithContext(t.Context(), "GET", vultr.DefaultBaseURL+"/v2/instances/"+inst.ID+"/user-data", nil)
	req.Header.Set("Authorization", "Bearer "+sim.DefaultAPIKey)
	resp, err := v.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		UserData struct{ Data string } `json:"user_data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	raw, err := base64.StdEncoding.DecodeString(out.UserData.Data)
	require.NoError(t, err)
	assert.Equal(t, "#cloud-config\n", string(raw))
}

func TestSimListInstancesFollowsPagesAndFilters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, c := newSim(t, vultr.WithPerPage(100))
		for i := range 120 {
			tags := []string{"bulk"}
			if i%2 == 0 {
				tags = append(tags, "even")
			}
			_, err := v.SeedServer(sim.VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Label: "bulk", Tags: tags})
			require.NoError(t, err)
		}
		createVM(t, c, "other")
		v.ResetCalls()
		all, err := vultr.Collect(c.ListInstances(t.Context(), &vultr.InstanceListOptions{Label: "bulk"}))
		require.NoError(t, err)
		assert.Len(t, all, 120)
		ids := map[string]bool{}
		for _, in := range all {
			ids[in.ID] = true
			assert.Equal(t, "bulk", in.Label)
		}
		assert.Len(t, ids, 120, "no duplicates across pages")
		calls := v.Calls()
		require.Len(t, calls, 2, "two pages of 100")
		assert.NotContains(t, calls[0].Query, "cursor")
		assert.Contains(t, calls[1].Query, "cursor=")

		even, err := vultr.Collect(c.ListInstances(t.Context(), &vultr.InstanceListOptions{Tag: "even"}))
		require.NoError(t, err)
		assert.Len(t, even, 60)

		// Default page size (500): one request.
		_, c500 := newSimFrom(v)
		v.ResetCalls()
		all, err = vultr.Collect(c500.ListInstances(t.Context(), nil))
		require.NoError(t, err)
		assert.Len(t, all, 121)
		assert.Len(t, v.Calls(), 1)
	})
}

func newSimFrom(v *sim.Vultr) (*sim.Vultr, *vultr.Client) {
	return v, vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client()))
}

func TestSimBareMetal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := newSim(t)
		ctx := t.Context()
		bm, err := c.CreateBareMetal(ctx, &vultr.BareMetalCreate{Region: "ord", Plan: "vbm-256c-2048gb-8-mi300x-gpu",
			Label: "fleet-9c1b-0", ImageID: "docker", UserData: []byte("#cloud-config\n"), Tags: []string{"gpufleet"}})
		require.NoError(t, err)
		assert.Equal(t, "pending", bm.Status)
		ram, err := bm.RAMMB()
		require.NoError(t, err)
		assert.Equal(t, 2097152, ram)
		disks, err := bm.Disks()
		require.NoError(t, err)
		require.NotEmpty(t, disks)

		time.Sleep(39 * time.Minute)
		got, err := c.GetBareMetal(ctx, bm.ID)
		require.NoError(t, err)
		assert.Equal(t, "pending", got.Status, "bare metal takes 40 minutes")
		time.Sleep(time.Minute + time.Second)
		got, err = c.GetBareMetal(ctx, bm.ID)
		require.NoError(t, err)
		assert.Equal(t, "active", got.Status)
		_, ok := got.PublicIP()
		assert.True(t, ok)
		assert.NotNil(t, got.MACAddress.HardwareAddr())

		list, err := vultr.Collect(c.ListBareMetals(ctx, nil))
		require.NoError(t, err)
		require.Len(t, list, 1)
		_, err = c.UpdateBareMetal(ctx, bm.ID, &vultr.BareMetalUpdate{Tags: []string{}})
		assert.ErrorIs(t, err, fleet.ErrLocked, "inside the lock window after active")
		time.Sleep(5 * time.Minute)
		upd, err := c.UpdateBareMetal(ctx, bm.ID, &vultr.BareMetalUpdate{Label: "renamed", Tags: []string{}})
		require.NoError(t, err)
		require.NotNil(t, upd)
		assert.Equal(t, "renamed", upd.Label)
		assert.Empty(t, upd.Tags)
		require.NoError(t, c.DeleteBareMetal(ctx, bm.ID))
		time.Sleep(61 * time.Second)
		_, err = c.GetBareMetal(ctx, bm.ID)
		assert.ErrorIs(t, err, fleet.ErrNotFound)
	})
}

func TestSimUpdateInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := newSim(t)
		inst := createVM(t, c, "old")
		time.Sleep(7 * time.Minute)
		got, err := c.UpdateInstance(t.Context(), inst.ID, &vultr.InstanceUpdate{Label: "new", Tags: []string{}})
		require.NoError(t, err)
		require.NotNil(t, got, "PATCH answers 202 with the instance")
		assert.Equal(t, "new", got.Label)
		assert.Empty(t, got.Tags)
	})
}

func TestSimCapacityPlansAndRegions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, c := newSim(t)
		ctx := t.Context()
		require.NoError(t, v.SoldOut("vcg-a100-3c-30g-20vram", "ewr"))
		_, err := c.CreateInstance(ctx, &vultr.InstanceCreate{Region: "ewr", Plan: "vcg-a100-3c-30g-20vram", OSID: 1743})
		assert.ErrorIs(t, err, fleet.ErrNoCapacity)
		avail, err := c.RegionAvailability(ctx, "ewr", "")
		require.NoError(t, err)
		assert.NotContains(t, avail, "vcg-a100-3c-30g-20vram")
		assert.Contains(t, avail, "vc2-1c-1gb")

		_, err = c.CreateInstance(ctx, &vultr.InstanceCreate{Region: "ewr", Plan: "vbm-4c-32gb", OSID: 1743})
		assert.ErrorIs(t, err, fleet.ErrInvalidRequest, "a metal plan on /instances")

		plans, err := vultr.Collect(c.ListPlans(ctx, &vultr.PlanListOptions{Type: "vcg"}))
		require.NoError(t, err)
		require.NotEmpty(t, plans)
		for _, p := range plans {
			assert.Equal(t, "vcg", p.Type, p.ID)
			assert.NotEmpty(t, p.GPUType, p.ID)
			assert.Positive(t, p.HourlyCost, p.ID)
		}
		metal, err := vultr.Collect(c.ListMetalPlans(ctx))
		require.NoError(t, err)
		require.NotEmpty(t, metal)
		for _, p := range metal {
			assert.Positive(t, p.RAM, p.ID)
			assert.Positive(t, int(p.Disk), p.ID)
		}
		regions, err := vultr.Collect(c.ListRegions(ctx))
		require.NoError(t, err)
		assert.GreaterOrEqual(t, len(regions), 5)

		// Plans are public: a client without a key lists them.
		anon := vultr.New("", vultr.WithHTTPClient(v.Client()))
		_, err = vultr.Collect(anon.ListPlans(ctx, nil))
		require.NoError(t, err)
		_, err = vultr.Collect(anon.ListInstances(ctx, nil))
		assert.ErrorIs(t, err, fleet.ErrUnauthorized)
	})
}

func TestSimSSHKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := newSim(t)
		ctx := t.Context()
		const pub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl fleet@host"
		k, err := c.CreateSSHKey(ctx, "fleet-key", pub)
		require.NoError(t, err)
		got, err := c.GetSSHKey(ctx, k.ID)
		require.NoError(t, err)
		assert.Equal(t, pub, got.SSHKey)
		require.NoError(t, c.UpdateSSHKey(ctx, k.ID, "renamed", ""))
		keys, err := vultr.Collect(c.ListSSHKeys(ctx))
		require.NoError(t, err)
		require.Len(t, keys, 1)
		assert.Equal(t, "renamed", keys[0].Name)
		require.NoError(t, c.DeleteSSHKey(ctx, k.ID))
		_, err = c.GetSSHKey(ctx, k.ID)
		assert.ErrorIs(t, err, fleet.ErrNotFound)
	})
}

// S13: many goroutines share one client; its limiter keeps the fake's
// 30 requests/s bucket from ever answering 429.
func TestSimSharedLimiterAvoids429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, c := newSim(t)
		inst := createVM(t, c, "poll")
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				for range 10 {
					_, err := c.GetInstance(t.Context(), inst.ID)
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
		for _, call := range v.Calls() {
			assert.NotEqual(t, http.StatusTooManyRequests, call.Status)
		}
	})
}

// Without a client-side limit the fake throttles; GETs are retried after
// Retry-After and all succeed.
func TestSimThrottledGETsAreRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, c := newSim(t, vultr.WithRateLimit(0, 0), vultr.WithRetry(10, time.Second, 5*time.Second))
		inst := createVM(t, c, "poll")
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				_, err := c.GetInstance(t.Context(), inst.ID)
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		throttled := 0
		for _, call := range v.Calls() {
			if call.Status == http.StatusTooManyRequests {
				throttled++
			}
		}
		assert.Positive(t, throttled, "the fake did throttle")
	})
}

// S05: an outage of connection resets and 503s; a DELETE is retried through
// it within its context, a create is not retried at all.
func TestSimOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, c := newSim(t, vultr.WithRetry(20, time.Second, 10*time.Second))
		ctx := t.Context()
		require.NoError(t, v.Outage(30*time.Second))
		before := len(v.Calls())
		_, err := c.CreateInstance(ctx, &vultr.InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb", OSID: 1743})
		assert.ErrorIs(t, err, fleet.ErrUnavailable)
		assert.Len(t, v.Calls(), before+1)

		short, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err = vultr.Collect(c.ListVPCs(short))
		assert.ErrorIs(t, err, context.DeadlineExceeded)

		vpcs, err := vultr.Collect(c.ListVPCs(ctx))
		require.NoError(t, err, "retried until the outage ended")
		assert.Empty(t, vpcs)
	})
}

// S06/S07: a create that took effect but answered 500 is not retried (one
// call, one server), and the server is found again by its label.
func TestSimCreateIsNeverRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, c := newSim(t, vultr.WithRetry(5, time.Millisecond, time.Millisecond))
		require.NoError(t, v.Inject(sim.Fault{Route: "POST /v2/instances", Times: 1, Status: 500,
			Message: "Internal error", AfterCommit: true}))
		_, err := c.CreateInstance(t.Context(), &vultr.InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb",
			Label: "req-42", OSID: 1743})
		assert.ErrorIs(t, err, fleet.ErrUnavailable)
		assert.Len(t, v.Calls(), 1, "no retry")
		found, err := vultr.Collect(c.ListInstances(t.Context(), &vultr.InstanceListOptions{Label: "req-42"}))
		require.NoError(t, err)
		assert.Len(t, found, 1, "exactly one server, found by label")
	})
}

// Against the fake's rules: a server with two private networks has a blank
// internal_ip, and the provider reads its address from the attachments (on
// the network whose label names the server's fleet; with two unlabelled
// networks it could not tell, and gives none); a list with two filters is
// refused before it is sent (the fake would answer 400).
func TestSimPrivateIPOfAServerInTwoVPCsAndOneListFilter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, c := newSim(t)
		var ids []string
		for _, desc := range []string{"net", "gf2.t1.two.0123456789ab"} {
			vpc, err := c.CreateVPC(t.Context(), &vultr.VPCCreate{Region: "ewr", Description: desc})
			require.NoError(t, err)
			ids = append(ids, vpc.ID)
		}
		inst := createVM(t, c, "gf2.t1.two.ba9876543210", ids...)
		time.Sleep(10 * time.Minute)
		raw, err := c.GetInstance(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.Empty(t, raw.InternalIP, "the fake leaves internal_ip blank with two VPCs, as the API does")
		p := vultr.NewProvider(c)
		member, err := p.InstanceVPCs(t.Context(), inst.ID) // as the Manager confirms an attach
		require.NoError(t, err)
		require.ElementsMatch(t, ids, member)
		got, err := p.Get(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.Empty(t, got.PrivateIP, "two networks, neither known as the fleet's: no address rather than a wrong one")
		_, err = p.ListVPCs(t.Context())
		require.NoError(t, err)
		got, err = p.Get(t.Context(), inst.ID)
		require.NoError(t, err)
		atts, err := vultr.Collect(c.ListInstanceVPCs(t.Context(), inst.ID))
		require.NoError(t, err)
		for _, a := range atts {
			if a.ID == ids[1] {
				assert.Equal(t, a.IPAddress, got.PrivateIP, "the address on the fleet's network")
				assert.Equal(t, ids[1], got.VPCID)
			}
		}
		before := len(v.Calls())
		for _, err := range c.ListInstances(t.Context(), &vultr.InstanceListOptions{Tag: "gpufleet", Region: "ewr"}) {
			require.ErrorIs(t, err, fleet.ErrInvalidRequest)
			break
		}
		assert.Equal(t, before, len(v.Calls()), "nothing was sent")
	})
}
