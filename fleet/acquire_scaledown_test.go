package fleet_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apSlowReads is a LeaseStore whose intent reads answer late (delay after
// the read: a database under load, a round trip across regions).
type apSlowReads struct {
	fleet.LeaseStore
	delay atomic.Int64
}

func (s *apSlowReads) Intents(ctx context.Context, f string) ([]fleet.Intent, error) {
	ins, err := s.LeaseStore.Intents(ctx, f)
	if d := time.Duration(s.delay.Load()); d > 0 {
		time.Sleep(d)
	}
	return ins, err
}

// An orchestrator scales a one-node Hot Aisle VM fleet to zero (Apply,
// Nodes 0) while another of its goroutines places a job 50 ms later
// (Acquire): the node is handed out. A scale-down never releases a busy
// node (Manager.Apply, shrink: "never busy ones"), and a node handed out by
// Acquire counts as taken: the node must stay until the job gives it back
// (MarkIdle), as it does with one Manager.
//
// (tester AP: before the fix, on two replicas whose store answers intent reads in 100 ms: the
// holder read the Apply before the Acquire's busy mark was stored, carried
// it out, and released the node for "scale down" under its job (terminated
// 20 s later, 40 minutes into its rental); the busy mark, carried out next,
// was ignored. shrinkOf (provision.go) skipped r.Busy but not m.acquired
// (nodes handed out whose busy mark is not carried out yet), which
// idleReleaseDue does honour; on one Manager the mark is carried out in the
// same pass, in call order, before the shrink (the intent queue).)
func TestAcquireRacingAScaleDown(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				s := spec("sd", 1, hotType("vm-mi300x-1"))
				slow := &apSlowReads{LeaseStore: fleet.NewMemoryLeaseStore(nil)}
				rs := apReplicasOn(t, e, slow, fleet.Policy{}, 2)
				time.Sleep(time.Minute)
				m := rs.ms[apConverge(t, rs, s)]
				time.Sleep(40 * time.Minute)
				slow.delay.Store(int64(100 * time.Millisecond))
				s.Nodes = 0
				require.NoError(t, m.Apply(t.Context(), s))
				time.Sleep(50 * time.Millisecond)
				in, err := m.Acquire(t.Context(), "sd")
				slow.delay.Store(0)
				time.Sleep(time.Minute)
				defer rs.stopAll()
				if err != nil {
					t.Logf("Acquire: %v (nothing handed out)", err)
					return
				}
				recs, err := slow.Instances(t.Context())
				require.NoError(t, err)
				for _, r := range recs {
					if r.Instance.ID == in.ID {
						t.Logf("the node handed out, a minute later: %s, busy %v, termination %+v", r.Instance.Status, r.Busy, r.Termination)
						assert.Nil(t, r.Termination, "the node handed out is released under its job")
					}
				}
				assert.Equal(t, 1, e.liveServers(), "the node running the job is gone")
			})
		})
	}
}
