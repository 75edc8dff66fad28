package fleet_test

import (
	"crypto/ed25519"
	"strings"

	"context"
	"fmt"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"golang.org/x/crypto/ssh"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowCreates makes every create of a provider take d of cloud time
// before it reaches the cloud.
type slowCreates struct {
	fleet.Provider
	d time.Duration
}

func (s slowCreates) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
		return fleet.Instance{}, ctx.Err()
	}
	return s.Provider.Create(ctx, req)
}

// runFor runs m's loop for d of cloud time.
func runFor(t *testing.T, m *fleet.Manager, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	assert.ErrorIs(t, m.Run(ctx), context.DeadlineExceeded)
}

func (e *env) managerWith(cfg fleet.Config) *fleet.Manager {
	e.t.Helper()
	if cfg.Store == nil {
		cfg.Store = fleet.NewMemoryStore()
	}
	cfg.Policy = e.policy
	cfg.OnEvent = func(ev fleet.Event) { e.mu.Lock(); e.events = append(e.events, ev); e.mu.Unlock() }
	m, err := fleet.NewManager(cfg)
	require.NoError(e.t, err)
	e.t.Cleanup(m.Close)
	return m
}

// A fleet deleted while its creates are under way: what lands is released
// at once by the loop, and the scale-up stops at the intent change.
func TestDeleteWhileCreatesAreUnderWayLeavesNothing(t *testing.T) {
	for _, provider := range []string{"vultr", "hotaisle"} {
		t.Run(provider, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{MaxConcurrentCreates: 2})
				var p fleet.Provider = slowCreates{e.vp, 30 * time.Second}
				req := vultrVM("ewr")
				if provider == "hotaisle" {
					p, req = slowCreates{e.hp, 30 * time.Second}, hotType("vm-mi300x-1")
				}
				e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{p}, Owner: testOwner})
				require.NoError(t, e.m.Apply(t.Context(), spec("five", 5, req)))
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- e.m.Run(ctx) }()
				time.Sleep(10 * time.Second) // the first creates are under way
				require.NoError(t, e.m.Delete(t.Context(), "five"))
				time.Sleep(3 * time.Hour)
				cancel()
				require.ErrorIs(t, <-done, context.Canceled)
				created := 0
				for _, r := range append(e.vultr.Resources(), e.hot.Resources()...) {
					if r.Kind != "ssh_key" {
						created++
					}
				}
				assert.LessOrEqual(t, created, 2, "only the creates already under way reached the cloud")
				assert.Zero(t, e.liveServers(), "what landed after the Delete was released")
				assert.Equal(t, 1, e.count(fleet.EventFleetDeleted))
			})
		})
	}
}

// Two Managers with different owners in one account, with the same fleet
// names, never touch each other's machines.
func TestTwoOwnersInOneAccountNeverTouchEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OrphanGrace: time.Minute, Release: fleet.ReleaseNow})
		a := e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: "teama"})
		b := e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: "teamb"})
		for _, m := range []*fleet.Manager{a, b} {
			require.NoError(t, m.Apply(t.Context(), spec("train", 1, vultrVM("ewr"))))
			require.NoError(t, m.Apply(t.Context(), spec("infer", 1, hotType("vm-mi300x-1"))))
			s := clusterSpec("mesh", 2)
			require.NoError(t, m.Apply(t.Context(), s))
		}
		step := func(d time.Duration) {
			for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Second) {
				require.NoError(t, a.Reconcile(t.Context()))
				require.NoError(t, b.Reconcile(t.Context()))
			}
		}
		step(20 * time.Minute)
		require.Equal(t, 8, e.liveServers())
		require.Equal(t, 2, live(e.vultr.Resources(), "vpc"))
		bIDs := map[string]bool{}
		for _, name := range []string{"train", "infer", "mesh"} {
			for _, inst := range b.Instances(name) {
				bIDs[inst.ID] = true
			}
		}
		for _, name := range []string{"train", "infer", "mesh"} {
			require.NoError(t, a.Delete(t.Context(), name))
		}
		step(2 * time.Hour)
		assert.Equal(t, 4, e.liveServers(), "only a's servers are gone")
		for _, r := range append(e.vultr.Resources(), e.hot.Resources()...) {
			if bIDs[r.ID] {
				assert.True(t, r.Live(), "b's %s untouched", r.ID)
			}
		}
		assert.Equal(t, 1, live(e.vultr.Resources(), "vpc"), "b's VPC untouched")
		assert.Positive(t, e.count(fleet.EventForeignFound), "each sees the other's resources, reported once")
		for _, name := range []string{"train", "infer", "mesh"} {
			assert.Len(t, activeOf(b.Instances(name)), map[string]int{"mesh": 2}[name]+map[string]int{"train": 1, "infer": 1}[name])
			require.NoError(t, b.Delete(t.Context(), name))
		}
		step(2 * time.Hour)
		e.assertNothingLeft()
	})
}

func activeOf(insts []fleet.Instance) []fleet.Instance {
	var out []fleet.Instance
	for _, i := range insts {
		if i.Status.Active() {
			out = append(out, i)
		}
	}
	return out
}

// A release due at T happens within a minute of T while 100 slow creates
// are pending for another fleet.
func TestReleaseDueWhileAHundredCreatesArePending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{slowCreates{e.vp, 20 * time.Minute}, e.hp}, Owner: testOwner})
		require.NoError(t, e.m.Apply(t.Context(), spec("keep", 1, hotType("vm-mi300x-1"))))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- e.m.Run(ctx) }()
		time.Sleep(3 * time.Minute)
		inst := e.only("keep")
		require.Equal(t, fleet.StatusIdle, inst.Status)
		at, err := e.m.Release(t.Context(), inst.ID)
		require.NoError(t, err)
		require.True(t, at.After(time.Now()), "the release waits for the minimum reservation")
		require.NoError(t, e.m.Delete(t.Context(), "keep"))
		require.NoError(t, e.m.Apply(t.Context(), spec("many", 100, vultrVM("ewr"))))
		time.Sleep(time.Until(at) + 5*time.Minute)
		var deleted time.Time
		for _, c := range e.hot.Calls() {
			if c.Method == "DELETE" && deleted.IsZero() {
				deleted = c.Time
			}
		}
		require.False(t, deleted.IsZero(), "released")
		assert.Less(t, deleted.Sub(at), time.Minute, "due at %s, released at %s", at, deleted)
		require.NoError(t, e.m.Delete(t.Context(), "many"))
		time.Sleep(3 * time.Hour)
		cancel()
		<-done
		e.assertNothingLeft()
	})
}

// After a restart with an empty Store (same owner), the labelled
// instances and VPC of a fleet nobody applies again are collected.
func TestEmptyStoreRestartCollectsInstancesAndVPCs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OrphanGrace: 5 * time.Minute})
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		e.run(20 * time.Minute)
		require.Equal(t, 1, live(e.vultr.Resources(), "vpc"))
		e.m.Close()
		e.m = e.manager(fleet.NewMemoryStore())
		e.run(3 * time.Hour)
		e.assertNothingLeft()
		assert.Positive(t, e.count(fleet.EventOrphanFound))
	})
}

// A hanging call of one provider is cut by CallTimeout and holds up no
// other work.
func TestHangingProviderCallsAreBoundedByCallTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{CallTimeout: time.Minute, Release: fleet.ReleaseNow})
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{hanging{e.vp}, e.hp}, Owner: testOwner})
		require.NoError(t, e.m.Apply(t.Context(), spec("ha", 1, hotType("vm-mi300x-1"))))
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 1)))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- e.m.Run(ctx) }()
		time.Sleep(5 * time.Minute)
		assert.Equal(t, fleet.StatusIdle, e.only("ha").Status, "Hot Aisle work went on")
		assert.Positive(t, e.count(fleet.EventProviderUnavailable), "Vultr's hanging list was cut")
		cancel()
		<-done
	})
}

// hanging is a Vultr provider whose every call hangs until its ctx ends.
type hanging struct{ *vultr.Provider }

func hang[T any](ctx context.Context) (T, error) {
	<-ctx.Done()
	var zero T
	return zero, ctx.Err()
}

func (hanging) List(ctx context.Context) ([]fleet.Instance, error) {
	return hang[[]fleet.Instance](ctx)
}
func (hanging) Get(ctx context.Context, _ string) (fleet.Instance, error) {
	return hang[fleet.Instance](ctx)
}
func (hanging) Create(ctx context.Context, _ fleet.CreateRequest) (fleet.Instance, error) {
	return hang[fleet.Instance](ctx)
}
func (hanging) Delete(ctx context.Context, _ string, _ fleet.DeleteOptions) error {
	_, err := hang[int](ctx)
	return err
}
func (hanging) ListVPCs(ctx context.Context) ([]fleet.VPC, error) { return hang[[]fleet.VPC](ctx) }

// Public calls race the loop on cluster fleets: Delete races creates and
// VPC work, Release races a scale-up, Close races Run. A Manager on the
// same Store then finishes the deletions: nothing is left.
func TestConcurrentIntentsOnClusterFleets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- e.m.Run(ctx) }()
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Go(func() {
				name := fmt.Sprintf("mesh%d", w)
				for i := range 12 {
					_ = e.m.Apply(t.Context(), clusterSpec(name, 1+(i+w)%3))
					time.Sleep(time.Duration(20+w*7) * time.Second)
					for _, inst := range e.m.Instances(name) {
						switch (i + w) % 3 {
						case 0:
							_, _ = e.m.Release(t.Context(), inst.ID)
						case 1:
							_ = e.m.MarkBusy(inst.ID)
						default:
							_ = e.m.MarkIdle(inst.ID)
						}
					}
					if i%4 == 3 {
						_ = e.m.Delete(t.Context(), name)
					}
					_ = e.m.Fleets()
					_ = e.m.Records()
				}
				_ = e.m.Delete(t.Context(), name)
			})
		}
		wg.Wait()
		e.m.Close() // races Run
		assert.ErrorIs(t, <-done, fleet.ErrClosed)
		e.m = e.manager(e.store)
		for _, s := range e.m.Fleets() {
			_ = e.m.Delete(t.Context(), s.Name)
		}
		e.run(3 * time.Hour)
		e.assertNothingLeft()
		assert.Empty(t, e.m.Fleets())
	})
}

func newKeyLine(t *testing.T, comment string) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	sp, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))) + " " + comment
}

// The SSH keys a Manager registered on a Hot Aisle account are removed once
// no fleet of its owner needs them; a key registered by hand, or needed by
// another owner's fleet, stays.
func TestSSHKeysRemovedOnceNoFleetNeedsThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		byHand := newKeyLine(t, "me@laptop")
		_, _, err := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(e.hot.Client())).AddSSHKey(t.Context(), byHand)
		require.NoError(t, err)
		mine, theirs := newKeyLine(t, "a@ci"), newKeyLine(t, "b@ci")
		b := e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: "other"})
		s := spec("train", 1, hotType("vm-mi300x-1"))
		s.SSHKeys = []string{mine, byHand}
		require.NoError(t, e.m.Apply(t.Context(), s))
		s.SSHKeys = []string{theirs}
		require.NoError(t, b.Apply(t.Context(), s))
		for end := time.Now().Add(10 * time.Minute); time.Now().Before(end); time.Sleep(10 * time.Second) {
			require.NoError(t, e.m.Reconcile(t.Context()))
			require.NoError(t, b.Reconcile(t.Context()))
		}
		require.Equal(t, 3, live(e.hot.Resources(), "ssh_key"))
		require.NoError(t, e.m.Delete(t.Context(), "train"))
		e.run(2 * time.Hour)
		assert.Equal(t, 1, e.count(fleet.EventSSHKeyDeleted))
		var left []string
		for _, r := range e.hot.Resources() {
			if r.Kind == "ssh_key" && r.Live() {
				left = append(left, r.Name)
			}
		}
		assert.ElementsMatch(t, []string{"me@laptop", "gf2.other.train." + b.Instances("train")[0].RequestID}, left,
			"the hand-made key and the other owner's stay")
	})
}

// A cluster fleet that no configured provider can place in a VPC is
// refused at Apply with ErrVPCUnsupported instead of waiting forever.
func TestClusterFleetWithoutVPCProviderIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		s := spec("pair", 3, hotType("vm-mi300x-1"))
		s.Placement = fleet.PlacementCluster
		err := e.m.Apply(t.Context(), s)
		require.ErrorIs(t, err, fleet.ErrVPCUnsupported)
		assert.Contains(t, err.Error(), "hotaisle")
		only := e.managerWith(fleet.Config{Providers: []fleet.Provider{e.hp}, Owner: "x"})
		s.Requirements.Providers = nil
		require.ErrorIs(t, only.Apply(t.Context(), s), fleet.ErrVPCUnsupported)
		assert.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)), "Vultr has VPCs")
	})
}

// A key removal that fails (the API refuses it for 5 minutes) is retried
// after its backoff even when nothing lists the keys again: a Manager
// restarted without its Store and without fleets still removes what its
// owner registered.
func TestFailedSSHKeyRemovalIsRetriedWithoutAListing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		s := spec("train", 1, hotType("vm-mi300x-1"))
		s.SSHKeys = []string{newKeyLine(t, "a@ci")}
		require.NoError(t, e.m.Apply(t.Context(), s))
		require.True(t, e.runUntil(10*time.Minute, func() bool { return e.only("train").Status == fleet.StatusIdle }))
		require.Equal(t, 1, live(e.hot.Resources(), "ssh_key"))
		e.m.Close()
		require.NoError(t, e.hot.Inject(sim.Fault{Route: "DELETE /api/user/ssh_keys/{fingerprint}/", Status: 503, Duration: 5 * time.Minute}))
		e.m = e.manager(fleet.NewMemoryStore()) // the Store is lost; no fleet is applied again
		e.run(2 * time.Hour)
		assert.Zero(t, live(e.hot.Resources(), "ssh_key"), "removed after the failed attempts")
		assert.Equal(t, 1, e.count(fleet.EventSSHKeyDeleted))
		e.assertNothingLeft()
	})
}
