package hotaisle_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	routeProvision = "POST /api/teams/{team}/virtual_machines/"
	routeListVMs   = "GET /api/teams/{team}/virtual_machines/"
	routePatchVM   = "PATCH /api/teams/{team}/virtual_machines/{vm}/"
)

// liveVMs returns the fake's live VMs.
func liveVMs(h *sim.HotAisle) []sim.Resource {
	var out []sim.Resource
	for _, r := range h.Resources() {
		if r.Live() && r.Kind == "virtual_machine" {
			out = append(out, r)
		}
	}
	return out
}

func callsTo(h *sim.HotAisle, route string) int {
	n := 0
	for _, c := range h.Calls() {
		if c.Route == route {
			n++
		}
	}
	return n
}

func oneGPUOffer(t *testing.T, p *hotaisle.Provider) fleet.Offer {
	t.Helper()
	offers, err := p.Offers(t.Context())
	require.NoError(t, err)
	return fleet.Filter(offers, fleet.Requirements{GPUCount: 1})[0]
}

// A provision that answers 500 after assigning the VM leaves a VM without a
// label (the label is a later PATCH): Create finds it by comparing the VM
// lists, labels it and returns it, instead of leaving it billing unseen.
func TestProviderCreateRecoversVMProvisionedBehind500(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, p := simProvider(t)
		o := oneGPUOffer(t, p)
		require.NoError(t, h.Inject(sim.Fault{Route: routeProvision, Times: 1, Status: 500, AfterCommit: true}))
		label := fleet.Label{Fleet: "ha", RequestID: "0123456789ab"}
		inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: label})
		require.NoError(t, err)

		vms := liveVMs(h)
		require.Len(t, vms, 1, "one VM, not a second one")
		assert.Equal(t, vms[0].ID, inst.ID)
		assert.Equal(t, label.String(), vms[0].Description, "labelled")
		assert.Equal(t, "ha", inst.Fleet)
		assert.Equal(t, label.RequestID, inst.RequestID)
		assert.Equal(t, o.InstanceType, inst.Offer.InstanceType)
		assert.Equal(t, 2, callsTo(h, routeListVMs), "one list before, one after")
	})
}

// A definite refusal (404 no capacity) means nothing was created: no second
// list, no adoption, even when (here, by a fault) a VM did appear.
func TestProviderCreateDoesNotRecoverAfterDefiniteRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, p := simProvider(t)
		o := oneGPUOffer(t, p)
		require.NoError(t, h.Inject(sim.Fault{Route: routeProvision, Times: 1, Status: 404, AfterCommit: true,
			Message: "No available virtual machine matching requested specifications"}))
		_, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "ha", RequestID: "0123456789ab"}})
		require.ErrorIs(t, err, fleet.ErrNoCapacity)
		assert.Equal(t, 1, callsTo(h, routeListVMs), "only the list before the POST")
		assert.Zero(t, callsTo(h, routePatchVM))
		vms := liveVMs(h)
		require.Len(t, vms, 1)
		assert.Empty(t, vms[0].Description)
	})
}

// hookPOST runs hook once, on the first VM provision, before the request
// goes on.
type hookPOST struct {
	rt   http.RoundTripper
	done atomic.Bool
	hook func()
}

func (h *hookPOST) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/virtual_machines/") && h.done.CompareAndSwap(false, true) {
		h.hook()
	}
	return h.rt.RoundTrip(r)
}

func hookedProvider(h *sim.HotAisle, hook func()) *hotaisle.Provider {
	hc := &http.Client{Transport: &hookPOST{rt: h.Client().Transport, hook: hook}}
	return hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(hc)))
}

// Two new unlabelled VMs of the spec after an ambiguous failure (here one is
// provisioned by another client between the two lists): there is no telling
// which is ours, so the error is returned and neither is touched.
func TestProviderCreateLeavesSeveralCandidatesAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle()
		other := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client()))
		var o fleet.Offer
		p := hookedProvider(h, func() {
			_, err := other.ProvisionVM(context.Background(), hotaisle.VMProvisionRequest{VMSpecs: o.ProviderData.(hotaisle.VMSpecs)})
			assert.NoError(t, err)
			assert.NoError(t, h.Inject(sim.Fault{Route: routeProvision, Times: 1, Status: 500, AfterCommit: true}))
		})
		o = oneGPUOffer(t, p)
		_, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "ha", RequestID: "0123456789ab"}})
		require.ErrorIs(t, err, fleet.ErrUnavailable, "the original error")
		vms := liveVMs(h)
		require.Len(t, vms, 2)
		for _, vm := range vms {
			assert.Empty(t, vm.Description, vm.ID)
		}
		assert.Zero(t, callsTo(h, routePatchVM))
	})
}

// A VM this Provider created itself but could not label yet is not taken for
// the VM of a concurrent Create whose provision answered 500 after commit.
func TestProviderCreateRecoveryIgnoresItsOwnUnlabelledVMs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle()
		var (
			p     *hotaisle.Provider
			o     fleet.Offer
			first fleet.Instance
		)
		p = hookedProvider(h, func() {
			// A concurrent Create: its VM stays unlabelled (3 PATCHes fail).
			assert.NoError(t, h.Inject(sim.Fault{Route: routePatchVM, Times: 3, Status: 500}))
			var err error
			first, err = p.Create(context.Background(), fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "a", RequestID: "aaaaaaaaaaaa"}})
			assert.NoError(t, err)
			assert.NoError(t, h.Inject(sim.Fault{Route: routeProvision, Times: 1, Status: 500, AfterCommit: true}))
		})
		o = oneGPUOffer(t, p)
		label := fleet.Label{Fleet: "b", RequestID: "bbbbbbbbbbbb"}
		inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: label})
		require.NoError(t, err)
		assert.NotEqual(t, first.ID, inst.ID)
		byID := map[string]string{}
		for _, vm := range liveVMs(h) {
			byID[vm.ID] = vm.Description
		}
		require.Len(t, byID, 2)
		assert.Empty(t, byID[first.ID])
		assert.Equal(t, label.String(), byID[inst.ID])
	})
}
