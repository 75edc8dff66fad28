package vultr_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// routeCount counts the sim calls whose route contains part.
func routeCount(v *sim.Vultr, part string) int {
	n := 0
	for _, c := range v.Calls() {
		if strings.Contains(c.Route, part) {
			n++
		}
	}
	return n
}

// seedFleet plants one Cloud GPU VM and two bare-metal servers, labelled.
func seedFleet(t *testing.T, v *sim.Vultr) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for i, s := range []sim.VultrSeed{
		{Plan: "vcg-a100-3c-30g-20vram", Region: "ewr"},
		{Plan: "vbm-256c-2048gb-8-mi300x-gpu", Region: "ord"},
		{Plan: "vbm-4c-32gb", Region: "ewr"},
	} {
		s.Label = fleet.Label{Fleet: "f", RequestID: strings.Repeat(string(rune('a'+i)), 12)}.String()
		s.Tags = []string{vultr.TagFleet}
		id, err := v.SeedServer(s)
		require.NoError(t, err)
		ids[s.Region+"/"+s.Plan] = id
	}
	return ids
}

// After a lost Store the Manager adopts what List returns: a fresh Provider
// (nothing cached) fills each Offer from one fetch of the two plan lists,
// without any availability call.
func TestListFillsOffersOfAFreshProvider(t *testing.T) {
	v, fresh := simProvider(t)
	ids := seedFleet(t, v)
	_, ref := simProvider(t) // the offers Offers builds, for comparison
	offers, err := ref.Offers(t.Context())
	require.NoError(t, err)

	v.ResetCalls()
	insts, err := fresh.List(t.Context())
	require.NoError(t, err)
	require.Len(t, insts, 3)
	assert.Equal(t, 1, routeCount(v, "GET /v2/plans-metal"))
	assert.Equal(t, 2, routeCount(v, "GET /v2/plans"), "/v2/plans and /v2/plans-metal, once each")
	assert.Zero(t, routeCount(v, "availability"))

	byID := map[string]fleet.Instance{}
	for _, in := range insts {
		byID[in.ID] = in
	}
	for key, id := range ids {
		got := byID[id].Offer
		want := offerByKey(t, offers, "vultr/"+key)
		want.Available = false
		assert.Equal(t, want, got, key)
		assert.Positive(t, got.PricePerHour, key)
		assert.Equal(t, time.Hour, got.MinimumReservation, key)
		assert.Equal(t, time.Hour, got.BillingGranularity, key)
	}
	vm := byID[ids["ewr/vcg-a100-3c-30g-20vram"]].Offer
	assert.Equal(t, vultr.VMProvisionTimeout, vm.ProvisionTimeout)
	assert.True(t, vm.SupportsVPC)
	mi := byID[ids["ord/vbm-256c-2048gb-8-mi300x-gpu"]].Offer
	assert.Equal(t, 17.52, mi.PricePerHour)
	assert.Equal(t, vultr.BareMetalProvisionTimeout, mi.ProvisionTimeout)
	assert.True(t, mi.SupportsVPC)
	assert.True(t, mi.BareMetal)
	assert.False(t, byID[ids["ewr/vbm-4c-32gb"]].Offer.SupportsVPC, "no private networking")

	// The rows are kept: a second List and a Get fetch no plan again.
	v.ResetCalls()
	again, err := fresh.List(t.Context())
	require.NoError(t, err)
	assert.Equal(t, insts, again)
	got, err := fresh.Get(t.Context(), ids["ord/vbm-256c-2048gb-8-mi300x-gpu"])
	require.NoError(t, err)
	assert.Equal(t, mi, got.Offer)
	assert.Zero(t, routeCount(v, "/v2/plans"))
}

func TestListKeepsBareOffersWhenPlansFail(t *testing.T) {
	v := sim.NewVultr()
	p := vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client()), vultr.WithRetry(1, 0, 0)))
	ids := seedFleet(t, v)
	for _, r := range []string{"GET /v2/plans", "GET /v2/plans-metal"} {
		require.NoError(t, v.Inject(sim.Fault{Route: r, Status: 503, Message: "Service Unavailable"}))
	}
	insts, err := p.List(t.Context())
	require.NoError(t, err, "plan errors are ignored")
	require.Len(t, insts, 3)
	for _, in := range insts {
		assert.Zero(t, in.Offer.PricePerHour)
		assert.NotEmpty(t, in.Offer.InstanceType)
	}
	v.ClearFaults()
	insts, err = p.List(t.Context())
	require.NoError(t, err)
	for _, in := range insts {
		assert.Equal(t, time.Hour, in.Offer.MinimumReservation, "the next List fetches again")
	}
	assert.Len(t, ids, 3)
}

// Offers fills the cache: List then makes no plan call, and Create completes
// a hand-built offer.
func TestOffersFeedTheInstanceOffers(t *testing.T) {
	v, p := simProvider(t)
	_, err := p.Offers(t.Context())
	require.NoError(t, err)
	inst, err := p.Create(t.Context(), fleet.CreateRequest{Label: fleet.Label{Fleet: "f", RequestID: "0123456789ab"},
		Offer: fleet.Offer{Provider: fleet.ProviderVultr, Region: "ewr", InstanceType: "vcg-a100-3c-30g-20vram"}})
	require.NoError(t, err)
	assert.Positive(t, inst.Offer.PricePerHour)
	assert.Equal(t, time.Hour, inst.Offer.MinimumReservation)
	v.ResetCalls()
	insts, err := p.List(t.Context())
	require.NoError(t, err)
	require.Len(t, insts, 1)
	assert.Equal(t, inst.Offer, insts[0].Offer)
	assert.Zero(t, routeCount(v, "/v2/plans"))
}
