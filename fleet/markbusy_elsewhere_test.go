package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An orchestrator that picks a node itself marks it busy (MarkBusy) through
// the replica that does not hold its fleet, a few seconds before the node's
// idle release moment (a Hot Aisle VM never used: its minimum's end less a
// minute; a Vultr VM: its hour's end less the calm margin, 3 min). MarkBusy
// answers nil, so the node runs the job: it must not be released under it
// (or MarkBusy must answer an error, as it does for a node whose release is
// recorded).
//
// (tester AP: before the fix, MarkBusy answered nil 2, 5 or 9 s before the moment, and the
// holder released the node at the moment all the same (ReleaseRequested
// "idle"; no InstanceBusy ever): the busy mark, read at the holder's next
// lease sync (every LeaseTTL/3, 10 s), found the node terminating and was
// dropped without a word (applyStored → markBusy returns on r.Termination).
// The job lost its machine; the idle release lowered Nodes, so none
// replaced it. markStored checks the stored record and stored release
// intents only, not a release the holder is about to decide.)
func TestMarkBusyElsewhereJustBeforeTheIdleRelease(t *testing.T) {
	for _, c := range []struct {
		name   string
		req    fleet.Requirements
		moment time.Duration // the idle release moment from the start of billing
	}{
		{"hotaisle vm", hotType("vm-mi300x-1"), 29 * time.Minute},
		{"vultr vm", vultrVM("ewr"), 57 * time.Minute},
	} {
		for _, before := range []time.Duration{2 * time.Second, 5 * time.Second, 9 * time.Second} {
			t.Run(c.name+" "+before.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					o := oneNodeOnReplicas(t, "mb", c.req, fleet.Policy{RebuyHoldOff: true}, 5*time.Minute)
					e, rs, from := o.e, o.rs, o.from
					time.Sleep(time.Until(from.Add(c.moment - before)))
					err := rs.ms[1-o.h].MarkBusy(o.node)
					time.Sleep(2 * time.Minute)
					rs.stopAll()
					apDump(t, e, from)
					if err != nil {
						t.Logf("MarkBusy: %v", err)
						return
					}
					assert.Equal(t, 1, e.liveServers(), "the node MarkBusy said busy was released under its job")
					assert.NotZero(t, e.count(fleet.EventInstanceBusy), "the busy mark was never carried out")
				})
			})
		}
	}
}

// What marksRead leaves: a MarkBusy stored through the replica that does
// not hold the fleet while the holder's read before an idle release is
// under way (intent reads take 3 s: the mark's own check of the fleet's
// releases too). The read misses the mark and the release goes ahead; the
// mark, read next, finds the node's delete under way or done (a Hot Aisle
// VM at its minimum's end less a minute, a Vultr VM at its hour's last
// safe moment): it is said with EventMarkDropped, never dropped without a
// word (tester AP: before the fix, dropped silently).
func TestMarkBusyElsewhereDuringTheHoldersRead(t *testing.T) {
	for _, c := range []struct {
		name   string
		req    fleet.Requirements
		moment time.Duration // the idle release moment from the start of billing
	}{
		{"hotaisle vm", hotType("vm-mi300x-1"), 29 * time.Minute},
		{"vultr vm", vultrVM("ewr"), 57 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := oneNodeOnReplicas(t, "mb", c.req, fleet.Policy{RebuyHoldOff: true}, 5*time.Minute)
				e, rs, from := o.e, o.rs, o.from
				time.Sleep(time.Until(from.Add(c.moment - time.Second)))
				o.slow.delay.Store(int64(3 * time.Second))
				err := rs.ms[1-o.h].MarkBusy(o.node)
				t.Logf("MarkBusy answered %v at %v", err, time.Since(from))
				time.Sleep(2 * time.Minute)
				rs.stopAll()
				apDump(t, e, from)
				if err != nil {
					return // refused: nothing to carry out
				}
				kept := e.liveServers() == 1 && e.count(fleet.EventInstanceBusy) > 0
				assert.True(t, kept || e.count(fleet.EventMarkDropped) > 0, "the busy mark was dropped without a word")
			})
		})
	}
}

// A scale-down of an idle Hot Aisle VM inside its minimum waits for the
// minimum's end (the rest is paid anyway). A MarkBusy recorded through the
// replica that does not hold the fleet, its check made before the release
// was stored and its write landing while the holder's read before the
// release was under way (intent reads take 3 s), finds the release
// waiting: it takes it back, and the node runs the job (tester AP: before
// the fix, the mark was dropped without a word and the node released at
// the minimum's end under its job).
func TestMarkBusyElsewhereTakesBackAWaitingScaleDown(t *testing.T) {
	for _, at := range []time.Duration{2 * time.Second, 3*time.Second + 500*time.Millisecond, 5 * time.Second} {
		t.Run(at.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := oneNodeOnReplicas(t, "sd", hotType("vm-mi300x-1"), fleet.Policy{}, 0)
				e, rs, from, slow := o.e, o.rs, o.from, o.slow
				time.Sleep(time.Until(from.Add(10 * time.Minute)))
				slow.delay.Store(int64(3 * time.Second))
				o.s.Nodes = 0
				require.NoError(t, rs.ms[o.h].Apply(t.Context(), o.s))
				time.Sleep(at)
				err := rs.ms[1-o.h].MarkBusy(o.node)
				t.Logf("MarkBusy answered %v at %v", err, time.Since(from))
				slow.delay.Store(0)
				time.Sleep(30 * time.Minute)
				rs.stopAll()
				apDump(t, e, from)
				if err != nil {
					return // refused: nothing to carry out
				}
				assert.Equal(t, 1, e.liveServers(), "the node MarkBusy said busy was released under its job")
				assert.NotZero(t, e.count(fleet.EventInstanceBusy), "the busy mark was never carried out")
				assert.Zero(t, e.count(fleet.EventMarkDropped))
			})
		})
	}
}

// A scale-down of an idle Hot Aisle VM past its minimum goes at once. A
// MarkBusy recorded through the replica that does not hold the fleet
// lands after the holder's read that brings the Apply (Nodes 0) began
// (intent reads take 3 s): the holder reads the fleet's intents again
// before the scale-down, carries the mark out first, and keeps the node
// for its job (tester AP: before the fix, released under its job).
func TestMarkBusyElsewhereJustBeforeAScaleDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := oneNodeOnReplicas(t, "sd", hotType("vm-mi300x-1"), fleet.Policy{}, 0)
		e, rs, from, slow, s, h := o.e, o.rs, o.from, o.slow, o.s, o.h
		time.Sleep(time.Until(from.Add(40 * time.Minute)))
		slow.delay.Store(int64(3 * time.Second))
		var markErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(2 * time.Second) // its write lands 2 s after the Apply's
			markErr = rs.ms[1-h].MarkBusy(o.node)
			t.Logf("MarkBusy answered %v at %v", markErr, time.Since(from))
		}()
		s.Nodes = 0
		require.NoError(t, rs.ms[h].Apply(t.Context(), s))
		t.Logf("Apply answered at %v", time.Since(from))
		<-done
		slow.delay.Store(0)
		time.Sleep(5 * time.Minute)
		rs.stopAll()
		apDump(t, e, from)
		if markErr != nil {
			return
		}
		assert.Equal(t, 1, e.liveServers(), "the node MarkBusy said busy was released under its job")
		assert.NotZero(t, e.count(fleet.EventInstanceBusy), "the busy mark was never carried out")
		assert.Zero(t, e.count(fleet.EventMarkDropped))
	})
}

// oneNodeReplicas is a fleet of one node converged on two replicas sharing
// a store whose reads can be slowed (slow.delay).
type oneNodeReplicas struct {
	e    *env
	slow *apSlowReads
	rs   *replicaSet
	s    fleet.Spec // the fleet's spec as applied
	h    int        // the replica holding the fleet
	from time.Time  // the node's billing start
	node string     // the node's instance id
}

// oneNodeOnReplicas applies fleet name (one node of req; idleTimeout when
// not 0) on two replicas of policy pol, and waits for its node.
func oneNodeOnReplicas(t *testing.T, name string, req fleet.Requirements, pol fleet.Policy, idleTimeout time.Duration) *oneNodeReplicas {
	t.Helper()
	o := &oneNodeReplicas{e: newEnv(t, fleet.Policy{}), slow: &apSlowReads{LeaseStore: fleet.NewMemoryLeaseStore(nil)}}
	o.rs = apReplicasOn(t, o.e, o.slow, pol, 2)
	time.Sleep(time.Minute)
	o.s = spec(name, 1, req)
	if idleTimeout > 0 {
		o.s.IdleTimeout = idleTimeout
	}
	o.h = apConverge(t, o.rs, o.s)
	o.from = apCharge(t, o.e).From
	idle := storedIdle(t, o.rs.store, name)
	require.Len(t, idle, 1)
	o.node = idle[0].Instance.ID
	return o
}
