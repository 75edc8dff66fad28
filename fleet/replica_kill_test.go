package fleet_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// killGate is one replica's Vultr provider: once armed, the first call of
// its step (create, delete, vpc) reaches the cloud, and its answer is held
// until the call's context ends (the replica is killed meanwhile).
type killGate struct {
	*vultr.Provider
	step  string
	idx   int
	armed *atomic.Bool // shared by the replicas: the first to call takes it
	hit   chan int
}

func (g *killGate) hold(ctx context.Context, step string) error {
	if g.step != step || !g.armed.CompareAndSwap(true, false) {
		return nil
	}
	g.hit <- g.idx
	<-ctx.Done()
	return ctx.Err()
}

func (g *killGate) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	in, err := g.Provider.Create(ctx, req)
	if err == nil {
		if herr := g.hold(ctx, "create"); herr != nil {
			return fleet.Instance{}, herr
		}
	}
	return in, err
}

func (g *killGate) Delete(ctx context.Context, id string, o fleet.DeleteOptions) error {
	err := g.Provider.Delete(ctx, id, o)
	if err == nil {
		if herr := g.hold(ctx, "delete"); herr != nil {
			return herr
		}
	}
	return err
}

func (g *killGate) CreateVPC(ctx context.Context, region string, l fleet.Label) (fleet.VPC, error) {
	v, err := g.Provider.CreateVPC(ctx, region, l)
	if err == nil {
		if herr := g.hold(ctx, "vpc"); herr != nil {
			return fleet.VPC{}, herr
		}
	}
	return v, err
}

// The replica holding a cluster fleet is killed (its loop stopped, no
// cleanup) right after one of its calls reached the cloud and before the
// answer came back: the VPC create, a server create, the delete of a
// released server. The other replica takes the fleet over. Expected
// (issue 14 points 2 and 3, scenarios "created but never recorded" and
// "no VPC leaked"): the fleet converges with one VPC and one server per
// node, nothing created twice, and after Delete nothing is left on the
// fake: no server, no VPC.
func TestReplicaKilledAtEachStep(t *testing.T) {
	for _, step := range []string{"vpc", "create", "delete"} {
		t.Run(step, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := fleet.NewMemoryLeaseStore(nil)
				armed := &atomic.Bool{}
				hit := make(chan int, 2)
				rs := &replicaSet{e: e, store: store}
				for i := range 2 {
					rs.add(t, "rk", store, &killGate{Provider: e.vp, step: step, idx: i, armed: armed, hit: hit})
				}
				time.Sleep(time.Minute) // both alive before the fleet exists
				if step != "delete" {
					armed.Store(true)
				}
				require.NoError(t, rs.ms[0].Apply(t.Context(), clusterSpec("kc", 2)))
				if step == "delete" {
					for deadline := time.Now().Add(time.Hour); !converged(t, store, map[string]int{"kc": 2}); time.Sleep(30 * time.Second) {
						require.True(t, time.Now().Before(deadline), "not converged")
					}
					time.Sleep(20 * time.Minute)
					armed.Store(true)
					idle := storedIdle(t, store, "kc")
					require.NotEmpty(t, idle)
					_, err := rs.ms[0].Release(t.Context(), idle[0].Instance.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
					require.NoError(t, err)
				}
				var killed int
				select {
				case killed = <-hit:
				case <-time.After(2 * time.Hour):
					t.Fatal("the step was never reached")
				}
				rs.stop(killed)
				alive := 1 - killed
				for deadline := time.Now().Add(2 * time.Hour); !converged(t, store, map[string]int{"kc": 2}); time.Sleep(30 * time.Second) {
					require.True(t, time.Now().Before(deadline), "not converged after replica %d was killed", killed)
				}
				time.Sleep(10 * time.Minute)
				vpcs := 0
				for _, r := range e.vultr.Resources() {
					if r.Kind == "vpc" {
						vpcs++
					}
				}
				assert.Equal(t, 1, vpcs, "VPCs ever created for one cluster fleet")
				want := 2
				if step == "delete" {
					want = 3 // the released one and its replacement
				}
				assert.Equal(t, want, createdRequests(t, e), "servers ever created")
				require.NoError(t, rs.ms[alive].Delete(t.Context(), "kc"))
				for deadline := time.Now().Add(3 * time.Hour); len(rs.ms[alive].Fleets()) > 0; time.Sleep(time.Minute) {
					require.True(t, time.Now().Before(deadline), "not deleted: %v", rs.ms[alive].Fleets())
				}
				time.Sleep(time.Hour)
				rs.stop(alive)
				e.assertNothingLeft()
			})
		})
	}
}
