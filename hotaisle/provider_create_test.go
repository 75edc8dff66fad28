package hotaisle_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

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
		assert.Equal(t, 2, callsTo(h, routeListVMs), "the first list of a fresh Provider, then the recovery's")
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
		assert.Equal(t, 1, callsTo(h, routeListVMs), "only the first list of a fresh Provider")
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
		h, p := simProvider(t)
		o := oneGPUOffer(t, p)
		// An earlier Create of this Provider: its VM stays unlabelled (3 PATCHes fail).
		require.NoError(t, h.Inject(sim.Fault{Route: routePatchVM, Times: 3, Status: 500}))
		first, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "a", RequestID: "aaaaaaaaaaaa"}})
		require.NoError(t, err)
		assert.Contains(t, first.LabelError, "PATCH", "the failed label is reported")
		// The next one fails after committing: its recovery must not take the first VM.
		require.NoError(t, h.Inject(sim.Fault{Route: routeProvision, Times: 1, Status: 500, AfterCommit: true}))
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

// Provisions of one Provider run one at a time: a second Create waits for
// the first, so two ambiguous failures cannot leave two candidates.
func TestProviderProvisionsOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, p := simProvider(t)
		o := oneGPUOffer(t, p)
		h.SetVMLimit(10)
		require.NoError(t, h.SetQuantity(o.InstanceType, 10))
		_, err := p.List(t.Context())
		require.NoError(t, err)
		require.NoError(t, h.Inject(sim.Fault{Route: routeProvision, Latency: 10 * time.Second}))
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				_, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "a", RequestID: fmt.Sprintf("%012d", i)}})
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		var posts []time.Time
		for _, c := range h.Calls() {
			if c.Route == routeProvision {
				posts = append(posts, c.Time)
			}
		}
		require.Len(t, posts, 4)
		sort.Slice(posts, func(a, b int) bool { return posts[a].Before(posts[b]) })
		for i := 1; i < len(posts); i++ {
			assert.GreaterOrEqual(t, posts[i].Sub(posts[i-1]), 10*time.Second, "one provision at a time")
		}
		assert.Len(t, liveVMs(h), 4)
	})
}

// Creates list nothing once the Provider has listed: N creates cost N
// provisions and N label writes, whatever the size of the team.
func TestProviderCreateListsOnlyAfterAnAmbiguousFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, p := simProvider(t)
		o := oneGPUOffer(t, p)
		require.NoError(t, h.SetQuantity(o.InstanceType, 100))
		h.SetVMLimit(100)
		_, err := p.List(t.Context())
		require.NoError(t, err)
		for i := range 20 {
			inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "n", RequestID: fmt.Sprintf("%012x", i)}})
			require.NoError(t, err)
			require.NotEmpty(t, inst.ID)
			assert.Empty(t, inst.LabelError)
		}
		assert.Equal(t, 1, callsTo(h, routeListVMs), "the Manager-style List only")
		assert.Equal(t, 20, callsTo(h, routeProvision))
		assert.Equal(t, 20, callsTo(h, routePatchVM))
	})
}

// The names of the latest List are the baseline: an unlabelled VM that
// another client made before it is not taken for ours, the one our
// provision assigned behind its 500 is.
func TestProviderCreateRecoveryUsesTheNamesOfTheLatestList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, p := simProvider(t)
		o := oneGPUOffer(t, p)
		other := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client()))
		theirs, err := other.ProvisionVM(t.Context(), hotaisle.VMProvisionRequest{VMSpecs: o.ProviderData.(hotaisle.VMSpecs)})
		require.NoError(t, err)
		_, err = p.List(t.Context())
		require.NoError(t, err)
		require.NoError(t, h.Inject(sim.Fault{Route: routeProvision, Times: 1, Status: 502, AfterCommit: true}))
		label := fleet.Label{Fleet: "r", RequestID: "0123456789ab"}
		inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: label})
		require.NoError(t, err)
		assert.NotEqual(t, theirs.Name, inst.ID)
		byID := map[string]string{}
		for _, vm := range liveVMs(h) {
			byID[vm.ID] = vm.Description
		}
		assert.Empty(t, byID[theirs.Name], "the other client's VM is untouched")
		assert.Equal(t, label.String(), byID[inst.ID])
		assert.Equal(t, 2, callsTo(h, routeListVMs), "List, then the recovery")
	})
}

// A label write that keeps failing is reported on the instance; the pauses
// between the three attempts run on the client's clock.
func TestProviderReportsAFailedLabelWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle()
		clock := &recordingClock{}
		p := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam,
			hotaisle.WithHTTPClient(h.Client()), hotaisle.WithClock(clock)))
		o := oneGPUOffer(t, p)
		require.NoError(t, h.Inject(sim.Fault{Route: routePatchVM, Times: 3, Status: 500}))
		start := time.Now()
		inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "l", RequestID: "0123456789ab"}})
		require.NoError(t, err, "the VM exists and bills: it is returned")
		require.NotEmpty(t, inst.ID)
		assert.Contains(t, inst.LabelError, "hotaisle: PATCH /teams/"+sim.DefaultTeam+"/virtual_machines/"+inst.ID+"/: 500")
		assert.Empty(t, inst.Fleet, "not labelled")
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, clock.sleeps())
		assert.Zero(t, time.Since(start), "no wall time was slept")
		assert.Equal(t, 3, callsTo(h, routePatchVM))
	})
}

// recordingClock is a clock whose sleeps return at once and are recorded.
type recordingClock struct {
	mu    sync.Mutex
	slept []time.Duration
}

func (c *recordingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.total())
}

func (c *recordingClock) total() time.Duration {
	var t time.Duration
	for _, d := range c.slept {
		t += d
	}
	return t
}

func (c *recordingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.slept = append(c.slept, d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *recordingClock) sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// A create whose context ends while an earlier provision still runs was
// never sent: its error wraps fleet.ErrNotSent (so the Manager does not look
// for a VM it cannot have made), and only the first provision reached the API.
func TestProviderCreateGivenUpBeforeSendingSaysNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, p := simProvider(t)
		o := oneGPUOffer(t, p)
		h.SetVMLimit(10)
		require.NoError(t, h.SetQuantity(o.InstanceType, 10))
		_, err := p.List(t.Context())
		require.NoError(t, err)
		require.NoError(t, h.Inject(sim.Fault{Route: routeProvision, Latency: 10 * time.Minute, Times: 1}))
		first := make(chan error, 1)
		go func() {
			_, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "a", RequestID: "000000000001"}})
			first <- err
		}()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err = p.Create(ctx, fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "a", RequestID: "000000000002"}})
		require.ErrorIs(t, err, fleet.ErrNotSent)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, <-first)
		assert.Equal(t, 1, callsTo(h, routeProvision), "the second never reached the API")
	})
}
