package fleet_test

import (
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// metalClusterSpec is a cluster fleet of Vultr bare metal (pending 40 min,
// then locked 5 min).
func metalClusterSpec(name string, nodes int) fleet.Spec {
	s := clusterSpec(name, nodes)
	s.Requirements.InstanceTypes = []string{"vbm-24c-256gb-amd"}
	return s
}

// assertAttachedOnce checks that every active member of the fleet is in
// exactly one VPC, the same for all, and confirmed attached (an event each).
func assertAttachedOnce(t *testing.T, e *env, fleetName string, members int) {
	t.Helper()
	assert.Equal(t, members, e.count(fleet.EventVPCAttached), "every member confirmed attached")
	assert.Zero(t, e.count(fleet.EventVPCUnavailable), "no member gave up on the VPC")
	one := ""
	for id, vpcs := range e.vpcMembers(fleetName) {
		if assert.Len(t, vpcs, 1, "member %s in exactly one VPC", id) {
			if one == "" {
				one = vpcs[0]
			}
			assert.Equal(t, one, vpcs[0], "members share one VPC")
		}
	}
}

// Attaches that take effect and still answer an error (a 5xx after the
// commit, or an answer slower than the call's deadline) are confirmed from
// the member's VPC listing, or by Vultr's 400 "already attached" to a
// repeated attach; attach calls then stop. VMs and bare metal, faults
// armed before the first attach and for longer than the attach backoff.
func TestAttachThatTookEffectIsConfirmed(t *testing.T) {
	cases := []struct {
		name  string
		spec  fleet.Spec
		fault sim.Fault
	}{
		{"vm, 500 after commit for 30 min", clusterSpec("mesh", 2), sim.Fault{Status: 500, AfterCommit: true, Duration: 30 * time.Minute}},
		{"vm, 502 after commit for 2 h", clusterSpec("mesh", 3), sim.Fault{Status: http.StatusBadGateway, AfterCommit: true, Duration: 2 * time.Hour}},
		{"vm, answers slower than the call deadline", clusterSpec("mesh", 2), sim.Fault{Latency: 2 * time.Minute, Times: 4}},
		{"vm, connection reset after commit", clusterSpec("mesh", 2), sim.Fault{Reset: true, AfterCommit: true, Duration: time.Hour}},
		{"bare metal, 500 after commit for 2 h", metalClusterSpec("mesh", 2), sim.Fault{Status: 500, AfterCommit: true, Duration: 2 * time.Hour}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				route := routeAttach
				if c.spec.Requirements.InstanceTypes[0] != "vc2-2c-4gb" {
					route = "POST /v2/bare-metals/{id}/vpcs/attach"
				}
				c.fault.Route = route
				require.NoError(t, e.vultr.Inject(c.fault))
				require.NoError(t, e.m.Apply(t.Context(), c.spec))
				e.run(2 * time.Hour)
				before := calls(e.vultr.Calls(), route, 0)
				e.run(time.Hour)
				t.Logf("attach calls: %d, then %d", before, calls(e.vultr.Calls(), route, 0)-before)
				assert.Zero(t, calls(e.vultr.Calls(), route, 0)-before, "attach calls stop")
				assertAttachedOnce(t, e, "mesh", c.spec.Nodes)
				e.teardownFleet("mesh")
			})
		})
	}
}

// Attach failures of any class end after Policy.VPCAttachAttempts failed
// attempts (the member goes on without the VPC, with a warning); refusals
// that ask to wait (locked, rate limited) end after three times as many
// attempts. Nothing attaches for ever.
func TestAttachRetriesAreBoundedWhateverTheError(t *testing.T) {
	const tries = 4
	cases := []struct {
		name  string
		fault sim.Fault
		limit int // attach calls per member at most
	}{
		{"400 of an unknown refusal", sim.Fault{Status: 400, Message: "Something else went wrong."}, tries},
		{"500 without a message", sim.Fault{Status: 500}, tries},
		{"503", sim.Fault{Status: http.StatusServiceUnavailable}, tries},
		{"403", sim.Fault{Status: http.StatusForbidden}, tries},
		{"Unable to attach VPC", sim.Fault{Status: 500, Message: "Unable to attach VPC"}, tries},
		{"connection reset", sim.Fault{Reset: true}, tries},
		{"locked", sim.Fault{Status: 500, Message: "Unable to attach VPC: Server is currently locked"}, 3 * tries},
		{"rate limited", sim.Fault{Status: http.StatusTooManyRequests, RetryAfter: time.Second}, 3 * tries},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{VPCAttachAttempts: tries})
				c.fault.Route = routeAttach
				require.NoError(t, e.vultr.Inject(c.fault))
				require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
				e.run(2 * time.Hour)
				n := calls(e.vultr.Calls(), routeAttach, 0)
				e.run(time.Hour)
				t.Logf("attach calls %d, then %d", n, calls(e.vultr.Calls(), routeAttach, 0)-n)
				assert.LessOrEqual(t, n, 2*c.limit, "attach calls bounded")
				assert.Equal(t, n, calls(e.vultr.Calls(), routeAttach, 0), "no attach call after giving up")
				assert.Equal(t, 2, e.count(fleet.EventVPCUnavailable), "each member warned once")
				assert.Len(t, activeOf(e.m.Instances("mesh")), 2, "members run without the VPC")
				e.teardownFleet("mesh")
			})
		})
	}
}

// While the members' VPC listings fail, an attach that answered 204 is not
// sent again: the next attempt reads the listing first, and the member is
// confirmed once the listing answers.
func TestAttachNotRepeatedWhileItsListingFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "GET /v2/instances/{id}/vpcs", Status: 500, Duration: 10 * time.Minute}))
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		e.run(time.Hour)
		assert.Equal(t, 2, calls(e.vultr.Calls(), routeAttach, http.StatusNoContent), "one attach that took effect per member")
		assert.Zero(t, calls(e.vultr.Calls(), routeAttach, http.StatusBadRequest), "no attach repeated on an attached member")
		assertAttachedOnce(t, e, "mesh", 2)
		e.teardownFleet("mesh")
	})
}

// A crash between the attach and the Store write, restarted with that
// Store or with an empty one, for VMs and bare metal: the restarted
// Manager confirms the members attached (the listing, or Vultr's 400
// "already attached") and stops.
func TestCrashBetweenAttachAndStoreWriteOtherInputs(t *testing.T) {
	for _, metal := range []bool{false, true} {
		for _, lost := range []bool{false, true} {
			t.Run(fmt.Sprintf("metal=%v,lost-store=%v", metal, lost), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s, route := clusterSpec("mesh", 2), routeAttach
					if metal {
						s, route = metalClusterSpec("mesh", 2), "POST /v2/bare-metals/{id}/vpcs/attach"
					}
					e := newEnv(t, fleet.Policy{})
					fs := &frozenStore{MemoryStore: fleet.NewMemoryStore()}
					e.m.Close()
					e.m = e.manager(fs)
					require.NoError(t, e.m.Apply(t.Context(), s))
					require.True(t, e.runUntil(time.Hour, func() bool { return e.count(fleet.EventVPCCreated) == 1 }))
					fs.frozen = true
					require.True(t, e.runUntil(time.Hour, func() bool { return e.count(fleet.EventVPCAttached) == 2 }))
					e.m.Close()
					fs.frozen = false
					var store fleet.Store = fs
					if lost {
						store = fleet.NewMemoryStore()
					}
					e.m = e.manager(store)
					require.NoError(t, e.m.Apply(t.Context(), s))
					e.run(time.Hour)
					before := calls(e.vultr.Calls(), route, 0)
					e.run(time.Hour)
					assert.Zero(t, calls(e.vultr.Calls(), route, 0)-before, "attach calls stop")
					assert.Equal(t, 4, e.count(fleet.EventVPCAttached), "confirmed again after the restart")
					assert.Zero(t, e.count(fleet.EventVPCUnavailable))
					assert.Equal(t, 1, live(e.vultr.Resources(), "vpc"))
					for id, vpcs := range e.vpcMembers("mesh") {
						assert.Len(t, vpcs, 1, "member %s in exactly one VPC", id)
					}
					e.teardownFleet("mesh")
				})
			})
		}
	}
}

// An attach refused outright (the server locked after boot, rate limited)
// took no effect: the member's VPCs are not listed after it, nor before the
// next attempt. Only attempts that may have taken effect are checked.
func TestAttachRefusedAsLockedIsNotListed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: routeAttach, Status: 500,
			Message: "Unable to attach VPC: Server is currently locked", Times: 4}))
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 1)))
		e.run(30 * time.Minute)
		require.Equal(t, 1, e.count(fleet.EventVPCAttached), "attached in the end")
		attaches := calls(e.vultr.Calls(), routeAttach, 0)
		listings := calls(e.vultr.Calls(), "GET /v2/instances/{id}/vpcs", 0)
		locked := calls(e.vultr.Calls(), routeAttach, 500)
		require.GreaterOrEqual(t, locked, 4, "the refusals happened")
		assert.LessOrEqual(t, listings, 2*(attaches-locked)+1,
			"%d listings for %d attaches, %d refused as locked", listings, attaches, locked)
		e.teardownFleet("mesh")
	})
}
