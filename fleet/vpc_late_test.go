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

// crashDuringVPCCreate applies s, lets the fleet's VPC create be sent with
// the given latency (it lands that long after it was sent), and closes the
// Manager once its call gave up (Policy.CallTimeout), before the VPC lands.
func (e *env) crashDuringVPCCreate(s fleet.Spec, latency time.Duration) {
	e.t.Helper()
	require.NoError(e.t, e.vultr.Inject(sim.Fault{Route: routeVPCCreate, Latency: latency, Times: 1}))
	require.NoError(e.t, e.m.Apply(e.t.Context(), s))
	require.True(e.t, e.runUntil(time.Hour, func() bool { return len(e.vultr.Faults()) > 0 }), "the VPC create was sent")
	e.m.Close()
	require.Zero(e.t, live(e.vultr.Resources(), "vpc"), "the crash came before the VPC landed")
}

// A VPC create sent just before a crash lands later: the restarted Manager
// (same Store or an empty one; VMs or bare metal; landing before or after
// the restarted Manager made its own VPC, within the hour after start)
// keeps one VPC for the fleet, with every member in it, collects the other
// after Policy.OrphanGrace, and Delete leaves nothing.
func TestVPCCreateLandingLateOtherInputs(t *testing.T) {
	for _, latency := range []time.Duration{4 * time.Minute, 20 * time.Minute, 45 * time.Minute} {
		for _, metal := range []bool{false, true} {
			for _, lost := range []bool{false, true} {
				t.Run(fmt.Sprintf("landing=%v,metal=%v,lost-store=%v", latency, metal, lost), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						s := clusterSpec("mesh", 2)
						if metal {
							s = metalClusterSpec("mesh", 2)
						}
						e := newEnv(t, fleet.Policy{})
						e.crashDuringVPCCreate(s, latency)
						store := e.store
						if lost {
							store = fleet.NewMemoryStore()
						}
						e.m = e.manager(store)
						require.NoError(t, e.m.Apply(t.Context(), s))
						e.run(latency + time.Hour)
						t.Logf("VPC creates %d, live VPCs %d, orphans %d", calls(e.vultr.Calls(), routeVPCCreate, 0),
							live(e.vultr.Resources(), "vpc"), e.count(fleet.EventOrphanFound))
						assert.Equal(t, 1, live(e.vultr.Resources(), "vpc"), "one live VPC")
						assertAttachedOnce(t, e, "mesh", 2)
						e.teardownFleet("mesh")
					})
				})
			}
		}
	}
}

// The late VPC lands while the restarted Manager (empty Store) cannot list
// VPCs: the fleet makes no VPC of its own, adopts the late one by its
// label once a listing works, and its members join it.
func TestVPCCreateLandingLateIsAdoptedWhenTheFleetHasNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.crashDuringVPCCreate(clusterSpec("mesh", 2), 8*time.Minute)
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "GET /v2/vpcs", Status: http.StatusInternalServerError, Duration: 15 * time.Minute}))
		e.m = e.manager(fleet.NewMemoryStore())
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("mesh", 2)))
		e.run(time.Hour)
		assert.Equal(t, 1, calls(e.vultr.Calls(), routeVPCCreate, 0), "no second VPC create")
		assert.Equal(t, 1, e.count(fleet.EventVPCAdopted))
		assert.Equal(t, 1, live(e.vultr.Resources(), "vpc"))
		assertAttachedOnce(t, e, "mesh", 2)
		e.teardownFleet("mesh")
	})
}

// The crashed process's fleet is not applied again after a restart with
// an empty Store: its servers and its late VPC are orphans, all collected.
func TestVPCCreateLandingLateWithoutItsFleetIsCollected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.crashDuringVPCCreate(clusterSpec("mesh", 2), 20*time.Minute)
		e.m = e.manager(fleet.NewMemoryStore())
		e.run(time.Hour)
		assert.Zero(t, live(e.vultr.Resources(), "vpc"), "the late VPC is collected")
		assert.Zero(t, e.liveServers(), "the servers are collected")
	})
}
