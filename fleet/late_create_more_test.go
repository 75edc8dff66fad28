package fleet_test

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

func provisionByHand(t *testing.T, e *env, typ string) string {
	t.Helper()
	c := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(e.hot.Client()))
	offers, err := e.hp.Offers(t.Context())
	require.NoError(t, err)
	for _, o := range offers {
		if o.InstanceType == typ {
			vm, err := c.ProvisionVM(t.Context(), hotaisle.VMProvisionRequest{VMSpecs: o.ProviderData.(hotaisle.VMSpecs)})
			require.NoError(t, err)
			return vm.Name
		}
	}
	t.Fatalf("no offer %s", typ)
	return ""
}

// Two Hot Aisle creates of one fleet of 2 are given up (their answers never
// came before CreateTimeout and CreateLookupGrace); one of them never
// committed, the other lands 12 minutes after its call, unlabelled. The
// fleet got two replacements meanwhile. The landed VM is the Manager's (the
// only new unlabelled VM of the type, within the hour, and a create of that
// type was given up), so it must be labelled and released, not left billing
// forever: in the end the fleet's two VMs are the only ones.
func TestTwoCreatesGivenUpOneLands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotCreate, Latency: createLatency, Times: 2}))
		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotCreate, Status: 500, Times: 1}))
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 2, reqOf("hotaisle"))))
		stop := e.running()
		time.Sleep(3 * time.Hour)
		stop()
		posts := calls(e.hot.Calls(), hotCreate, 0)
		require.Equal(t, 4, posts, "two given up, two replacements")
		assert.Equal(t, 2, liveOf(e, "hotaisle"), "the landed VM is collected: %+v", e.m.Instances("f"))
	})
}

// One Hot Aisle create given up lands late, and a human provisions a VM of
// the same type in the console meanwhile: the human's VM is never touched.
func TestGivenUpCreateLandsBesideAHumansVM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		e.slowCreates("hotaisle", createLatency, 1)
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, reqOf("hotaisle"))))
		stop := e.running()
		time.Sleep(11 * time.Minute)
		human := provisionByHand(t, e, "vm-mi300x-1")
		time.Sleep(3 * time.Hour)
		stop()
		var humanLive bool
		for _, r := range e.hot.Resources() {
			if r.ID == human {
				humanLive = r.Live()
				assert.Empty(t, r.Description, "the human's VM is not labelled")
			}
		}
		assert.True(t, humanLive, "the human's VM is left alone")
	})
}

// The same with two creates started at once (the offer proven by a first
// create, then the fleet grown from 1 to 3). The provider runs one provision
// at a time, so the second waits behind the first's 12-minute answer and is
// given up too ("waiting for an earlier provision": it never reached the
// API: ErrNotSent); so is the next pair. One VM lands, unlabelled: it is
// paired with the create that was sent, labelled, and the fleet ends with
// three, nothing left billing.
func TestTwoConcurrentCreatesGivenUpOneLands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, reqOf("hotaisle"))))
		stop := e.running()
		defer stop()
		time.Sleep(10 * time.Minute)
		require.Equal(t, fleet.StatusIdle, e.only("f").Status)
		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotCreate, Latency: createLatency, Times: 2}))
		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotCreate, Status: 500, Times: 1}))
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 3, reqOf("hotaisle"))))
		time.Sleep(4 * time.Hour)
		posts := calls(e.hot.Calls(), hotCreate, 0)
		// One first, two given up, two replacements; when the landed VM is paired
		// while later creates are still uncertain, it can be released as surplus
		// and replaced once more: never more than that.
		require.LessOrEqual(t, posts, 6, "creates stay bounded")
		t.Logf("creates given up: %d, unlabelled found: %d", e.count(fleet.EventCreateUnresolved), e.count(fleet.EventUnlabelledFound))
		assert.Len(t, activeOf(e.m.Instances("f")), 3)
		assert.Equal(t, 3, liveOf(e, "hotaisle"), "the landed VM is collected")
	})
}

// One slow Hot Aisle create (its answer 12 minutes late, no other fault)
// while a proven fleet grows from 1 to 3: the second create waits behind it
// in the provider and is given up without ever reaching the API
// (ErrNotSent). The slow one lands unlabelled and is paired with its create:
// nothing bills unlabelled.
func TestOneSlowCreateWhileGrowingByTwo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, reqOf("hotaisle"))))
		stop := e.running()
		defer stop()
		time.Sleep(10 * time.Minute)
		require.Equal(t, fleet.StatusIdle, e.only("f").Status)
		e.slowCreates("hotaisle", createLatency, 1)
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 3, reqOf("hotaisle"))))
		time.Sleep(4 * time.Hour)
		t.Logf("creates given up: %d, unlabelled found: %d", e.count(fleet.EventCreateUnresolved), e.count(fleet.EventUnlabelledFound))
		assert.Len(t, activeOf(e.m.Instances("f")), 3)
		assert.Equal(t, 3, liveOf(e, "hotaisle"), "the landed VM is adopted or collected")
	})
}
