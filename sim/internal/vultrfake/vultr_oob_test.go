package vultrfake

import (
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVultrOneFilterPerList(t *testing.T) {
	h := newVultrT(t)
	for _, q := range []string{"?tag=a&region=ewr", "?label=a&tag=b", "?main_ip=1.2.3.4&label=x", "?label=a&region=ewr&tag=c"} {
		assert.Equal(t, vultrMsgOneFilter, h.fail("GET", "/v2/instances"+q, nil, http.StatusBadRequest), q)
		assert.Equal(t, vultrMsgOneFilter, h.fail("GET", "/v2/bare-metals"+q, nil, http.StatusBadRequest), q)
	}
	h.obj("GET", "/v2/instances?tag=a&per_page=5", nil, 200) // paging is not a filter
}

func TestVultrInternalIPBlankWithTwoVPCs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		a, b := h.vpc("ewr"), h.vpc("ewr")
		id := h.v.mustSeed(t, VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", VPCs: []string{a}, Age: time.Hour})
		ip := h.get(id, false)["internal_ip"].(string)
		assert.NotEmpty(t, ip)
		h.obj("POST", "/v2/instances/"+id+"/vpcs/attach", map[string]any{"vpc_id": b}, 204)
		assert.Equal(t, "", h.get(id, false)["internal_ip"], "two private networks: blank")
		h.obj("POST", "/v2/instances/"+id+"/vpcs/detach", map[string]any{"vpc_id": b}, 204)
		assert.Equal(t, ip, h.get(id, false)["internal_ip"])
	})
}

func TestVultrHaltOutOfBand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		id := h.v.mustSeed(t, VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Age: time.Hour})
		addr := h.get(id, false)["main_ip"].(string) + ":22"
		require.NotNil(t, h.v.Network().Host(addr))
		require.NoError(t, h.v.HaltOutOfBand(id))
		assert.Equal(t, "stopped", h.get(id, false)["power_status"])
		assert.Equal(t, "active", h.get(id, false)["status"])
		assert.Nil(t, h.v.Network().Host(addr), "sshd is down")
		assert.Equal(t, "stopped", h.v.LiveResources(core.KindInstance)[0].Power)
		time.Sleep(time.Hour)
		c := h.v.Ledger().Charges[0]
		assert.True(t, c.Live, "a halted server bills")
		assert.Equal(t, 2*time.Hour, c.Billed)
		h.obj("POST", "/v2/instances/"+id+"/start", nil, 204)
		assert.Equal(t, "running", h.get(id, false)["power_status"])
		assert.NotNil(t, h.v.Network().Host(addr))
		assert.Error(t, h.v.HaltOutOfBand("nope"))
	})
}

func TestVultrRelabelOutOfBand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		id := h.create("vc2-1c-1gb", "ewr", map[string]any{"label": "mine", "tags": []string{"fleet-a", "owner-x"}})["id"].(string)
		require.NoError(t, h.v.RelabelOutOfBand(id, "renamed", nil))
		assert.Equal(t, "renamed", h.get(id, false)["label"])
		assert.Equal(t, []any{"fleet-a", "owner-x"}, h.get(id, false)["tags"], "nil tags: unchanged")
		assert.Empty(t, h.obj("GET", "/v2/instances?label=mine", nil, 200)["instances"])
		assert.Len(t, h.obj("GET", "/v2/instances?label=renamed", nil, 200)["instances"], 1)
		require.NoError(t, h.v.RelabelOutOfBand(id, "renamed", []string{}))
		assert.Empty(t, h.obj("GET", "/v2/instances?tag=fleet-a", nil, 200)["instances"])

		vpc := h.vpc("ewr")
		require.NoError(t, h.v.RelabelOutOfBand(vpc, "someone's", nil))
		assert.Equal(t, "someone's", h.obj("GET", "/v2/vpcs/"+vpc, nil, 200)["vpc"].(map[string]any)["description"])
		assert.Error(t, h.v.RelabelOutOfBand(vpc, "x", []string{"t"}))
		assert.Error(t, h.v.RelabelOutOfBand("nope", "x", nil))
	})
}

func TestVultrDestroyOutOfBandInvalidID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		id := h.create("vc2-1c-1gb", "ewr", nil)["id"].(string)
		require.NoError(t, h.v.DestroyOutOfBand(id, VultrGoneInvalidID))
		for _, m := range []string{"GET", "DELETE"} {
			assert.Equal(t, "invalid instance ID", h.fail(m, "/v2/instances/"+id, nil, http.StatusBadRequest))
		}
		h.fail("POST", "/v2/instances/"+id+"/halt", nil, http.StatusBadRequest)
		assert.Empty(t, h.obj("GET", "/v2/instances", nil, 200)["instances"])
		assert.Empty(t, h.v.LiveResources(""))

		other := h.create("vc2-1c-1gb", "ewr", nil)["id"].(string)
		require.NoError(t, h.v.DestroyOutOfBand(other, VultrGoneNotFound))
		assert.Equal(t, vultrMsgNoInstance, h.fail("GET", "/v2/instances/"+other, nil, 404))
	})
}

// A released main_ip goes to a new server, whose SSH host has a new key.
func TestVultrReuseReleasedIPs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		h.v.ReuseReleasedIPs(true)
		old := h.v.mustSeed(t, VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Age: time.Hour})
		ip := h.get(old, false)["main_ip"].(string)
		oldKey := h.v.Network().Host(ip + ":22").PublicKey()
		h.obj("DELETE", "/v2/instances/"+old, nil, 204)
		early := h.create("vc2-1c-1gb", "ewr", nil)["id"].(string)
		time.Sleep(2 * time.Minute)
		assert.NotEqual(t, ip, h.get(early, false)["main_ip"], "the old server is not gone yet")
		fresh := h.create("vc2-1c-1gb", "ewr", nil)["id"].(string)
		time.Sleep(2 * time.Minute)
		assert.Equal(t, ip, h.get(fresh, false)["main_ip"])
		host := h.v.Network().Host(ip + ":22")
		require.NotNil(t, host)
		assert.Equal(t, fresh, host.InstanceID())
		assert.NotEqual(t, oldKey.Marshal(), host.PublicKey().Marshal(), "a new host key at the old address")
		assert.Len(t, h.obj("GET", "/v2/instances?main_ip="+ip, nil, 200)["instances"], 1)

		h.v.ReuseReleasedIPs(false)
		earlyIP := h.get(early, false)["main_ip"]
		require.NoError(t, h.v.DestroyOutOfBand(early))
		third := h.v.mustSeed(t, VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Age: time.Hour})
		assert.NotEqual(t, earlyIP, h.get(third, false)["main_ip"], "reuse off: a fresh address")
	})
}

func TestVultrSoldOutAfterListing(t *testing.T) {
	h := newVultrT(t)
	plan := "vcg-a100-1c-6g-4vram"
	require.NoError(t, h.v.SoldOutAfterListing(plan, "ewr"))
	av := h.obj("GET", "/v2/regions/ewr/availability", nil, 200)["available_plans"]
	assert.Contains(t, av, plan, "still listed")
	assert.Equal(t, vultrMsgSoldOut, h.fail("POST", "/v2/instances",
		map[string]any{"region": "ewr", "plan": plan, "os_id": 1743}, 400))
	require.NoError(t, h.v.Restock(plan, "ewr"))
	h.create(plan, "ewr", nil)
	assert.Error(t, h.v.SoldOutAfterListing("nope", "ewr"))
}

func TestVultrRefuseVPCDelete(t *testing.T) {
	h := newVultrT(t)
	vpc := h.vpc("ewr")
	require.NoError(t, h.v.RefuseVPCDelete(1))
	assert.Contains(t, h.fail("DELETE", "/v2/vpcs/"+vpc, nil, 400), "attached to this VPC network")
	h.obj("DELETE", "/v2/vpcs/"+vpc, nil, 204)
}

// Servers younger than the visibility lag are missing from reads.
func TestVultrVisibilityLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t, WithVisibilityLag(30*time.Second))
		old := h.v.mustSeed(t, VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Label: "old", Age: time.Hour})
		id := h.create("vc2-1c-1gb", "ewr", map[string]any{"label": "new"})["id"].(string)
		assert.Equal(t, vultrMsgNoInstance, h.fail("GET", "/v2/instances/"+id, nil, 404))
		h.fail("GET", "/v2/instances/"+id+"/vpcs", nil, 404)
		m := h.obj("GET", "/v2/instances", nil, 200)
		require.Len(t, m["instances"], 1)
		assert.Equal(t, old, m["instances"].([]any)[0].(map[string]any)["id"], "a seeded server with an age is old")
		assert.EqualValues(t, 1, m["meta"].(map[string]any)["total"])
		assert.Empty(t, h.obj("GET", "/v2/instances?label=new", nil, 200)["instances"])
		h.obj("PATCH", "/v2/instances/"+id, map[string]any{"label": "renamed"}, 202) // mutations see it
		time.Sleep(30 * time.Second)
		assert.Equal(t, "renamed", h.get(id, false)["label"])
		assert.Len(t, h.obj("GET", "/v2/instances", nil, 200)["instances"], 2)

		// One call's lag, from a fault.
		h2 := newVultrT(t)
		id2 := h2.create("vc2-1c-1gb", "ewr", nil)["id"].(string)
		require.NoError(t, h2.v.Inject(core.Fault{Route: "GET /v2/instances", VisibilityLag: time.Minute, Times: 1}))
		require.NoError(t, h2.v.Inject(core.Fault{Route: "POST /v2/instances", VisibilityLag: time.Minute}))
		assert.Empty(t, h2.obj("GET", "/v2/instances", nil, 200)["instances"])
		assert.Len(t, h2.obj("GET", "/v2/instances", nil, 200)["instances"], 1)
		h2.get(id2, false)
		h2.create("vc2-1c-1gb", "ewr", nil)
		lags := 0
		for _, f := range h2.v.Faults() {
			if f.Kind == core.FaultLag {
				lags++
			}
		}
		assert.Equal(t, 1, lags, "a lag on a mutation does nothing and is not logged")
	})
}

// Lists stay right through creates, relabels and deletes, whatever the
// filter, and a paged walk with a lag sees each visible server once.
func TestVultrListIndex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		var ids []string
		for i := range 30 {
			ids = append(ids, h.v.mustSeed(t, VultrSeed{Plan: "vc2-1c-1gb", Region: []string{"ewr", "ord"}[i%2],
				Label: fmt.Sprintf("l%d", i%3), Tags: []string{fmt.Sprintf("t%d", i%5)}, Age: time.Hour}))
		}
		count := func(q string) int {
			return int(h.obj("GET", "/v2/instances"+q, nil, 200)["meta"].(map[string]any)["total"].(float64))
		}
		assert.Equal(t, 30, count(""))
		assert.Equal(t, 15, count("?region=ord"))
		assert.Equal(t, 10, count("?label=l1"))
		assert.Equal(t, 6, count("?tag=t4"))
		h.obj("PATCH", "/v2/instances/"+ids[1], map[string]any{"label": "l0", "tags": []string{"t0"}}, 202)
		assert.Equal(t, 9, count("?label=l1"))
		assert.Equal(t, 11, count("?label=l0"))
		assert.Equal(t, 7, count("?tag=t0"))
		h.obj("DELETE", "/v2/instances/"+ids[0], nil, 204)
		assert.Equal(t, 30, count(""), "destroying servers still list")
		time.Sleep(time.Minute)
		assert.Equal(t, 29, count(""))
		assert.Equal(t, 10, count("?label=l0"))
		ip := h.get(ids[2], false)["main_ip"].(string)
		assert.Equal(t, 1, count("?main_ip="+ip))

		for range 7 {
			h.create("vc2-1c-1gb", "ewr", nil)
		}
		time.Sleep(10 * time.Second)
		require.NoError(t, h.v.Inject(core.Fault{Route: "GET /v2/instances", VisibilityLag: 5 * time.Second}))
		h.create("vc2-1c-1gb", "ewr", nil)
		got, pages := vultrWalk(h, "/v2/instances?per_page=4", "instances")
		assert.Equal(t, 9, pages)
		assert.Len(t, got, 36, "29 seeded, 7 older than the lag; the newest is hidden")
		seen := map[string]bool{}
		for _, id := range got {
			assert.False(t, seen[id], "listed twice: %s", id)
			seen[id] = true
		}
	})
}

func TestVultrChaosFaultsAreServedRoutes(t *testing.T) {
	v := NewVultr()
	assert.NotEmpty(t, core.ChaosFaultsOf(v.server)["POST /v2/instances/{id}/vpcs/attach"])
	for route := range core.ChaosFaultsOf(v.server) {
		assert.Contains(t, v.Routes(), route)
	}
}

// A region's /16 full of servers spills into the next /16 instead of
// drawing for ever.
func TestVultrAddressesSpillOver(t *testing.T) {
	h := newVultrT(t)
	h.v.mu.Lock()
	for c := range 256 {
		for d := 2; d < 254; d++ {
			h.v.st.usedIPs[[4]byte{100, 64, byte(c), byte(d)}] = true
		}
	}
	h.v.unlock()
	id := h.v.mustSeed(t, VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Age: time.Hour})
	assert.Regexp(t, `^100\.65\.`, h.get(id, false)["main_ip"])
}

// Addresses are never a real network's: IPv4 from the shared address space
// 100.64.0.0/10, IPv6 from the documentation prefix 2001:db8::/32 (tester
// AA: the fake handed out Vultr's real blocks, so a suite connecting to a
// main_ip over the network reached strangers' servers).
func TestVultrAddressesAreNobodys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		shared, doc := netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("2001:db8::/32")
		var ids []string
		for _, region := range []string{"ewr", "ord", "ams", "nrt", "fra"} {
			ids = append(ids, h.create("vc2-1c-1gb", region, map[string]any{"enable_ipv6": true})["id"].(string))
		}
		time.Sleep(5 * time.Minute)
		for _, id := range ids {
			got := h.get(id, false)
			ip, err := netip.ParseAddr(got["main_ip"].(string))
			require.NoError(t, err)
			assert.True(t, shared.Contains(ip), "%v", ip)
			v6, err := netip.ParseAddr(got["v6_main_ip"].(string))
			require.NoError(t, err)
			assert.True(t, doc.Contains(v6), "%v", v6)
		}
	})
}
