package fleet_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lagging hides every new instance from List and Get for lag after its
// create, as an eventually consistent API does.
type lagging struct {
	fleet.Provider
	lag time.Duration

	mu  sync.Mutex
	new map[string]time.Time
}

func (l *lagging) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	inst, err := l.Provider.Create(ctx, req)
	if err == nil {
		l.mu.Lock()
		l.new[inst.ID] = time.Now()
		l.mu.Unlock()
	}
	return inst, err
}

func (l *lagging) hidden(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.new[id]
	return ok && time.Since(at) < l.lag
}

func (l *lagging) List(ctx context.Context) ([]fleet.Instance, error) {
	all, err := l.Provider.List(ctx)
	var out []fleet.Instance
	for _, i := range all {
		if !l.hidden(i.ID) {
			out = append(out, i)
		}
	}
	return out, err
}

func (l *lagging) Get(ctx context.Context, id string) (fleet.Instance, error) {
	if l.hidden(id) {
		return fleet.Instance{}, fleet.ErrNotFound
	}
	return l.Provider.Get(ctx, id)
}

// A server missing from lists and answering 404 for a minute after its
// create is not taken as gone: no replacement, one server.
func TestServerInvisibleRightAfterCreateIsNotReplaced(t *testing.T) {
	for _, provider := range []string{"vultr", "hotaisle"} {
		t.Run(provider, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				var p fleet.Provider = e.vp
				req := vultrVM("ewr")
				if provider == "hotaisle" {
					p, req = e.hp, hotType("vm-mi300x-1")
				}
				e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{&lagging{Provider: p, lag: 90 * time.Second, new: map[string]time.Time{}}}, Owner: testOwner})
				require.NoError(t, e.m.Apply(t.Context(), spec("one", 1, req)))
				e.run(10 * time.Minute)
				assert.Equal(t, 1, e.liveServers(), "exactly one server")
				assert.Zero(t, e.count(fleet.EventInstanceVanished))
				assert.Equal(t, fleet.StatusIdle, e.only("one").Status)
			})
		})
	}
}

// A VPC create that answers 502 after creating the VPC is found by its
// label: the fleet gets exactly one VPC and its members join it.
func TestAmbiguousVPCCreateIsFoundByLabel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "POST /v2/vpcs", Times: 1, Status: 502, AfterCommit: true}))
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		e.run(20 * time.Minute)
		assert.Equal(t, 1, calls(e.vultr.Calls(), "POST /v2/vpcs", 0), "never created twice")
		require.Equal(t, 1, live(e.vultr.Resources(), "vpc"))
		insts := e.m.Instances("mesh")
		require.Len(t, insts, 2)
		assert.NotEmpty(t, insts[0].VPCID)
		assert.Equal(t, insts[0].VPCID, insts[1].VPCID)
		require.NoError(t, e.m.Delete(t.Context(), "mesh"))
		e.run(2 * time.Hour)
		e.assertNothingLeft()
	})
}

// After a lost Store, a cluster fleet applied again adopts its labelled VPC
// instead of creating a second one.
func TestLostStoreClusterFleetKeepsItsVPC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		e.run(20 * time.Minute)
		require.Equal(t, 1, live(e.vultr.Resources(), "vpc"))
		e.m.Close()
		e.m = e.manager(fleet.NewMemoryStore())
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		e.run(20 * time.Minute)
		assert.Equal(t, 1, calls(e.vultr.Calls(), "POST /v2/vpcs", 0), "no second VPC")
		assert.Equal(t, 1, e.count(fleet.EventVPCAdopted))
		assert.Equal(t, 2, e.liveServers(), "adopted, not created again")
		require.NoError(t, e.m.Delete(t.Context(), "mesh"))
		e.run(2 * time.Hour)
		e.assertNothingLeft()
	})
}

// An adopted Hot Aisle VM (its list gives no creation time) whose minimum
// has long ended is released at once, not kept another minimum.
func TestAdoptedInstanceWithUnknownStartIsNotKeptAnotherMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("old", 1, hotType("vm-mi300x-2"))))
		e.run(3 * time.Hour) // its 60-minute minimum is long over
		e.m.Close()
		e.m = e.manager(fleet.NewMemoryStore())
		e.run(time.Minute)
		id := e.only("").ID
		require.NotEmpty(t, id, "adopted as an orphan")
		start := time.Now()
		e.run(15 * time.Minute) // the default OrphanGrace is 10 min
		assert.Zero(t, e.liveServers(), "released after the orphan grace, not a minimum later")
		assert.Less(t, time.Since(start), 20*time.Minute)
	})
}

// crashBeforeLabel provisions a Hot Aisle VM (the label is a second call)
// and then hangs, as a process that dies between the two calls.
type crashBeforeLabel struct {
	*hotaisle.Provider
	c *hotaisle.Client
}

func (p crashBeforeLabel) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	if _, err := p.c.ProvisionVM(ctx, hotaisle.VMProvisionRequest{VMSpecs: req.Offer.ProviderData.(hotaisle.VMSpecs)}); err != nil {
		return fleet.Instance{}, err
	}
	<-ctx.Done() // the process dies here
	return fleet.Instance{}, ctx.Err()
}

// A crash between a Hot Aisle VM's provision and its label: the restarted
// Manager finds the one new unlabelled VM of the offer, adopts and labels
// it, creates nothing more, and leaves an older unlabelled VM alone.
func TestCrashBetweenCreateAndLabelIsRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		c := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(e.hot.Client()))
		offers, err := e.hp.Offers(t.Context())
		require.NoError(t, err)
		var specs hotaisle.VMSpecs
		for _, o := range offers {
			if o.InstanceType == "vm-mi300x-1" {
				specs = o.ProviderData.(hotaisle.VMSpecs)
			}
		}
		byHand, err := c.ProvisionVM(t.Context(), hotaisle.VMProvisionRequest{VMSpecs: specs})
		require.NoError(t, err)

		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{crashBeforeLabel{e.hp, c}}, Owner: testOwner, Store: e.store})
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, hotType("vm-mi300x-1"))))
		ctx, cancel := context.WithCancel(t.Context())
		go func() { _ = e.m.Reconcile(ctx) }()
		time.Sleep(time.Minute)
		e.m.Close() // the crash: the record of the create stays pending in the Store
		cancel()

		e.m = e.manager(e.store)
		e.run(10 * time.Minute)
		posts := calls(e.hot.Calls(), "POST /api/teams/{team}/virtual_machines/", 0)
		assert.Equal(t, 2, posts, "the hand-made VM and the crashed create: nothing created again")
		insts := activeOf(e.m.Instances("f"))
		require.Len(t, insts, 1)
		assert.NotEqual(t, byHand.Name, insts[0].ID)
		want := fleet.Label{Owner: testOwner, Fleet: "f", RequestID: insts[0].RequestID}.String()
		for _, r := range e.hot.Resources() {
			switch r.ID {
			case insts[0].ID:
				assert.Equal(t, want, r.Description, "labelled")
			case byHand.Name:
				assert.Empty(t, r.Description, "the hand-made VM is left alone")
				assert.True(t, r.Live())
			}
		}
	})
}

// ambiguousAndLate commits its first create, answers 502, and hides that
// server from lists and gets for lag (longer than CreateLookupGrace).
type ambiguousAndLate struct {
	*lagging
	done *bool
}

func (a ambiguousAndLate) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	if *a.done {
		return a.lagging.Provider.Create(ctx, req)
	}
	*a.done = true
	if _, err := a.lagging.Create(ctx, req); err != nil {
		return fleet.Instance{}, err
	}
	return fleet.Instance{}, fmt.Errorf("502 after commit: %w", fleet.ErrUnavailable)
}

// A create given up after CreateLookupGrace whose server shows up later
// under its label is tracked again, whatever its record said, and released
// as surplus: nothing bills forever.
func TestCreateGivenUpThenShowingUpIsReadopted(t *testing.T) {
	bothClouds(t, func(t *testing.T, cloud string) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		var p fleet.Provider = e.vp
		req := vultrVM("ewr")
		if cloud == "hotaisle" {
			p, req = e.hp, hotType("vm-mi300x-1")
		}
		late := ambiguousAndLate{&lagging{Provider: p, lag: 8 * time.Minute, new: map[string]time.Time{}}, new(bool)}
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{late}, Owner: testOwner})
		require.NoError(t, e.m.Apply(t.Context(), spec("one", 1, req)))
		e.run(30 * time.Minute)
		assert.Equal(t, 1, e.count(fleet.EventCreateUnresolved), "given up after the lookup grace")
		assert.Positive(t, e.count(fleet.EventInstanceAdopted), "showed up and tracked again")
		e.run(time.Hour)
		assert.Equal(t, 1, e.liveServers(), "one server for a fleet of one: the surplus was released")
		require.NoError(t, e.m.Delete(t.Context(), "one"))
		e.run(2 * time.Hour)
		e.assertNothingLeft()
	})
}

// failingLists hides servers younger than lag from its lists, and fails
// every list inside [from, until) of cloud time.
type failingLists struct {
	fleet.Provider
	lag         time.Duration
	from, until time.Time
}

func (p *failingLists) List(ctx context.Context) ([]fleet.Instance, error) {
	if now := time.Now(); !now.Before(p.from) && now.Before(p.until) {
		return nil, fmt.Errorf("listing: %w", fleet.ErrUnavailable)
	}
	return listedAfter(ctx, p.Provider, p.lag)
}

func (p *failingLists) ListKind(ctx context.Context, _ bool) ([]fleet.Instance, error) {
	return p.List(ctx)
}

// A process restarted without its Store lists every provider once more
// VisibilityGrace after start, for servers created just before the crash
// that the first listing could not see; when that listing fails it is
// tried again, so the server is still found and collected.
func TestFailedListingAfterRestartIsTriedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, vultrVM("ewr"))))
		require.NoError(t, e.m.Reconcile(t.Context()))
		require.Equal(t, 1, e.liveServers(), "created just before the crash")
		e.m.Close()
		start := time.Now()
		vp := &failingLists{Provider: e.vp, lag: 2 * time.Minute, from: start.Add(3 * time.Minute), until: start.Add(5 * time.Minute)}
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{vp, e.hp}, Owner: testOwner}) // no fleet applied again
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Hour)
		defer cancel()
		assert.ErrorIs(t, e.m.Run(ctx), context.DeadlineExceeded)
		assert.Equal(t, 1, e.count(fleet.EventOrphanFound), "found by label after the failed listing")
		assert.Zero(t, e.liveServers(), "and collected")
	})
}
