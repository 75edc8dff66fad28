package hotaisle_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fresh Provider (a Manager that lost its Store) lists instances made by
// another client: their offers carry the price, minimum reservation and
// billing granularity of their type, though the VM and server objects have
// none, so the Manager can still force a release inside the minimum.
func TestProviderListFillsOffersOfInstancesItDidNotCreate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, other := simClient(t)
		ctx := t.Context()
		vmRows, err := other.ListVMTypes(ctx)
		require.NoError(t, err)
		for _, gpus := range []uint64{1, 2} {
			_, err := other.ProvisionVM(ctx, hotaisle.VMProvisionRequest{VMSpecs: simVMRow(t, vmRows, gpus).Specs})
			require.NoError(t, err)
		}
		bmRows, err := other.ListBareMetalTypes(ctx)
		require.NoError(t, err)
		bm, err := other.ReserveBareMetal(ctx, hotaisle.BareMetalReservation{Specs: bmRows[0].Specs})
		require.NoError(t, err)

		p := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
		listed, err := p.List(ctx)
		require.NoError(t, err)
		require.Len(t, listed, 3)
		want := map[string]struct {
			usd float64
			min time.Duration
		}{"vm-mi300x-1": {2.99, 30 * time.Minute}, "vm-mi300x-2": {5.98, time.Hour}, "bm-mi300x-8": {27.12, 8 * time.Hour}}
		for _, in := range listed {
			w, ok := want[in.Offer.InstanceType]
			require.True(t, ok, in.Offer.InstanceType)
			assert.InDelta(t, w.usd, in.Offer.PricePerHour, 1e-9, in.Offer.InstanceType)
			assert.Equal(t, w.min, in.Offer.MinimumReservation, in.Offer.InstanceType)
			assert.Equal(t, time.Minute, in.Offer.BillingGranularity, in.Offer.InstanceType)
		}

		got, err := p.Get(ctx, bm.Name)
		require.NoError(t, err)
		assert.Equal(t, 8*time.Hour, got.Offer.MinimumReservation, "Get uses the kept offers too")
		_, err = p.List(ctx)
		require.NoError(t, err)
		assert.Equal(t, 2, callsTo(h, "GET /api/teams/{team}/virtual_machines/available/"), "the test's, then once")
		assert.Equal(t, 2, callsTo(h, "GET /api/teams/{team}/bare_metal/available/"), "the test's, then once")
	})
}

// Offers feeds the cache: a Provider that listed offers fills a later List
// without fetching the types again.
func TestProviderListUsesOffersOfLastOffersCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, other := simClient(t)
		rows, err := other.ListVMTypes(t.Context())
		require.NoError(t, err)
		_, err = other.ProvisionVM(t.Context(), hotaisle.VMProvisionRequest{VMSpecs: simVMRow(t, rows, 2).Specs})
		require.NoError(t, err)
		p := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
		_, err = p.Offers(t.Context())
		require.NoError(t, err)
		listed, err := p.List(t.Context())
		require.NoError(t, err)
		require.Len(t, listed, 1)
		assert.InDelta(t, 5.98, listed[0].Offer.PricePerHour, 1e-9)
		assert.Equal(t, time.Hour, listed[0].Offer.MinimumReservation)
		assert.Equal(t, 2, callsTo(h, "GET /api/teams/{team}/virtual_machines/available/"), "the test's and Offers'")
		assert.Equal(t, fleet.ProviderHotAisle, listed[0].Provider)
	})
}
