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

const vm = "vc2-1c-1gb"                       // a cheap Vultr VM plan, $0.007/h
const mi300x = "vbm-256c-2048gb-8-mi300x-gpu" // Vultr MI300X bare metal, $17.52/h

func vultrVM(region string) fleet.Requirements {
	r := vultrType(vm)
	r.Regions = []string{region}
	return r
}

// releaseNow releases the fleet's only instance at once and deletes the
// fleet, so nothing replaces it.
func (e *env) releaseNow(name string) fleet.Instance {
	e.t.Helper()
	inst := e.only(name)
	_, err := e.m.Release(e.t.Context(), inst.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
	require.NoError(e.t, err)
	require.NoError(e.t, e.m.Delete(e.t.Context(), name))
	return inst
}

func (e *env) terminated(name string) func() bool {
	return func() bool { return e.only(name).Status == fleet.StatusTerminated }
}

func TestS01EarlyDeleteRefusedAsNotActive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("s01", 1, vultrVM("ewr"))))
		require.NoError(t, e.m.Reconcile(t.Context()))
		time.Sleep(5 * time.Second)
		inst := e.releaseNow("s01")
		e.run(time.Minute)
		assert.Equal(t, fleet.StatusTerminating, e.only("s01").Status, "refused while pending: still terminating")
		assert.Equal(t, 1, e.liveServers())
		require.True(t, e.runUntil(time.Hour, e.terminated("s01")))
		assert.Zero(t, calls(e.vultr.Calls(), "DELETE /v2/instances/{id}", http.StatusInternalServerError),
			"no delete while the offer says it is refused: pending, then locked")
		done := e.eventsOf(fleet.EventInstanceTerminated)
		require.Len(t, done, 1)
		assert.Equal(t, inst.ID, done[0].InstanceID)
		e.assertNothingLeft()
		assert.InDelta(t, 0.01, e.vultr.Ledger().TotalUSD, 0.005, "one started hour")
	})
}

func TestS02LockedForMinutesAfterBoot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.vultr.LockWindow(15 * time.Minute) // longer than the offer's 5 minutes: refusals are met
		require.NoError(t, e.m.Apply(t.Context(), spec("s02", 1, vultrVM("ewr"))))
		e.run(2 * time.Minute) // active at 90 s, locked until 16.5 min
		start := time.Now()
		e.releaseNow("s02")
		e.run(3 * time.Minute)
		assert.Equal(t, fleet.StatusTerminating, e.only("s02").Status, "kept through the lock")
		require.True(t, e.runUntil(time.Hour, e.terminated("s02")))
		locked := calls(e.vultr.Calls(), "DELETE /v2/instances/{id}", http.StatusInternalServerError)
		assert.GreaterOrEqual(t, locked, 3, "more than govultr's three quick retries were needed")
		assert.LessOrEqual(t, locked, 12, "minute-scale backoff, not hammering")
		assert.True(t, errHas(e.eventsOf(fleet.EventTerminationRetry), "currently locked"))
		assert.Greater(t, time.Since(start), 4*time.Minute)
		e.assertNothingLeft()
	})
}

func TestS03MinimumReservationWaitsByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("s03", 1, hotType("vm-mi300x-2"))))
		e.run(5 * time.Minute)
		inst := e.only("s03")
		at, err := e.m.Release(t.Context(), inst.ID)
		require.NoError(t, err)
		require.NoError(t, e.m.Delete(t.Context(), "s03"))
		assert.Equal(t, inst.Created.Add(59*time.Minute), at, "the caller sees the earliest release: the minimum less a minute")
		e.run(50 * time.Minute)
		assert.Equal(t, 1, e.liveServers(), "kept: the minimum is paid anyway")
		assert.Equal(t, fleet.StatusTerminating, e.only("s03").Status)
		require.True(t, e.runUntil(20*time.Minute, e.terminated("s03")))
		e.assertNothingLeft()
		assert.InDelta(t, 5.98, e.hot.Ledger().TotalUSD, 0.001, "exactly the 60-minute minimum")
		assert.Zero(t, e.count(fleet.EventReleaseForced))
	})
}

func TestS03MinimumReservationForcedNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), spec("s03", 1, hotType("vm-mi300x-2"))))
		e.run(5 * time.Minute)
		require.NoError(t, e.m.Delete(t.Context(), "s03"))
		require.True(t, e.runUntil(5*time.Minute, e.terminated("s03")))
		forced := e.eventsOf(fleet.EventReleaseForced)
		require.Len(t, forced, 1)
		assert.InDelta(t, 5.98*55/60, forced[0].USD, 0.1, "the unrefunded part of the minimum")
		e.assertNothingLeft()
		assert.InDelta(t, 5.98, e.hot.Ledger().TotalUSD, 0.05, "the minimum is charged")
	})
}

func TestS04DeletedBehindOurBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("hot", 1, hotType("vm-mi300x-1"))))
		require.NoError(t, e.m.Apply(t.Context(), spec("vul", 1, vultrVM("ewr"))))
		e.run(3 * time.Minute)
		e.releaseNow("vul") // its delete waits for the lock to end
		e.run(30 * time.Second)
		require.NoError(t, e.vultr.DestroyOutOfBand(e.only("vul").ID))
		require.True(t, e.runUntil(10*time.Minute, e.terminated("vul")))
		assert.Zero(t, e.count(fleet.EventTerminationStuck))

		require.NoError(t, e.hot.DeleteOutOfBand(e.only("hot").ID))
		e.run(11 * time.Minute) // noticed at the next drift check (Policy.DriftCheckInterval, 10 min)
		assert.Equal(t, 1, e.count(fleet.EventInstanceVanished))
		assert.Len(t, e.m.Instances("hot"), 2, "replaced, and the vanished one is on record")
		assert.Equal(t, 0, live(e.vultr.Resources(), ""))
	})
}

func TestS05CloudUnreachableDuringTeardown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		require.NoError(t, e.m.Apply(t.Context(), spec("hot", 1, hotType("vm-mi300x-1"))))
		require.NoError(t, e.m.Apply(t.Context(), spec("vul", 1, vultrVM("ewr"))))
		e.run(10 * time.Minute)
		require.NoError(t, e.vultr.Outage(20*time.Minute))
		e.hot.Outage(20 * time.Minute)
		require.NoError(t, e.m.Delete(t.Context(), "hot"))
		require.NoError(t, e.m.Delete(t.Context(), "vul"))
		e.run(19 * time.Minute)
		assert.Equal(t, fleet.StatusTerminating, e.only("hot").Status)
		assert.Equal(t, fleet.StatusTerminating, e.only("vul").Status)
		assert.Equal(t, 2, e.liveServers(), "nothing is marked terminated that still exists")
		assert.True(t, errHas(e.eventsOf(fleet.EventTerminationRetry), "unavailable") ||
			errHas(e.eventsOf(fleet.EventTerminationRetry), "503") || errHas(e.eventsOf(fleet.EventTerminationRetry), "reset"),
			"the outage was met and retried")
		require.True(t, e.runUntil(time.Hour, func() bool {
			return e.only("hot").Status == fleet.StatusTerminated && e.only("vul").Status == fleet.StatusTerminated
		}))
		e.assertNothingLeft()
	})
}

func TestS06CreatedButNeverRecorded(t *testing.T) {
	t.Run("create answers 500 after committing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, fleet.Policy{})
			require.NoError(t, e.vultr.Inject(sim.Fault{Route: "POST /v2/instances", Times: 1, Status: 500, AfterCommit: true}))
			require.NoError(t, e.m.Apply(t.Context(), spec("s06", 1, vultrVM("ewr"))))
			e.run(10 * time.Minute)
			assert.Equal(t, 1, e.count(fleet.EventCreateUncertain))
			assert.Equal(t, 1, e.count(fleet.EventInstanceAdopted))
			assert.Equal(t, 1, e.liveServers(), "exactly one server")
			assert.Equal(t, fleet.StatusIdle, e.only("s06").Status)
		})
	})
	t.Run("process dies; restarted without a store, the fleet applied again", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, fleet.Policy{})
			require.NoError(t, e.m.Apply(t.Context(), spec("s06", 1, vultrVM("ewr"))))
			require.NoError(t, e.m.Reconcile(t.Context())) // the create; then the process dies
			e.m.Close()
			e.m = e.manager(fleet.NewMemoryStore())
			require.NoError(t, e.m.Apply(t.Context(), spec("s06", 1, vultrVM("ewr"))))
			e.run(10 * time.Minute)
			assert.Equal(t, 1, e.count(fleet.EventInstanceAdopted))
			assert.Equal(t, 1, e.liveServers(), "adopted, not created again")
		})
	})
	t.Run("process dies; restarted without the fleet: collected after the grace period", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, fleet.Policy{OrphanGrace: 10 * time.Minute})
			require.NoError(t, e.m.Apply(t.Context(), spec("s06", 1, vultrVM("ewr"))))
			require.NoError(t, e.m.Reconcile(t.Context()))
			e.m.Close()
			e.m = e.manager(fleet.NewMemoryStore())
			e.run(9 * time.Minute)
			assert.Equal(t, 1, e.liveServers(), "left alone during the grace period")
			e.run(2 * time.Hour)
			assert.Equal(t, 1, e.count(fleet.EventOrphanFound))
			e.assertNothingLeft()
		})
	})
}

func TestS07CreateNeverRetriedIntoDuplicates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "POST /v2/instances", Times: 2, Status: 503, AfterCommit: true}))
		require.NoError(t, e.m.Apply(t.Context(), spec("s07", 2, vultrVM("ewr"))))
		e.run(15 * time.Minute)
		assert.Equal(t, 2, calls(e.vultr.Calls(), "POST /v2/instances", 0), "one create call per request, never a blind retry")
		assert.Equal(t, 2, e.liveServers(), "one server per request")
		assert.Len(t, e.m.Instances("s07"), 2)
	})
}

func TestS08NoVPCLeakedByAFailedLaunch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OrphanGrace: 10 * time.Minute})
		for _, r := range []string{"ord", "atl", "sea"} {
			require.NoError(t, e.vultr.SoldOut(mi300x, r))
		}
		ghost, err := e.vultr.SeedVPC("ord", fleet.Label{Owner: testOwner, Fleet: "ghost", RequestID: "0123456789ab"}.String())
		require.NoError(t, err)
		mine, err := e.vultr.SeedVPC("ord", "somebody else's VPC")
		require.NoError(t, err)
		s := spec("s08", 2, vultrType(mi300x))
		s.Placement = fleet.PlacementCluster
		require.NoError(t, e.m.Apply(t.Context(), s))
		e.run(30 * time.Minute)
		assert.Positive(t, e.count(fleet.EventNoOffers))
		assert.Zero(t, calls(e.vultr.Calls(), "POST /v2/vpcs", 0), "no VPC before a first member exists")
		var left []string
		for _, r := range e.vultr.Resources() {
			if r.Kind == "vpc" && r.Live() {
				left = append(left, r.ID)
			}
		}
		assert.Equal(t, []string{mine}, left, "the labelled orphan %s is collected, the unlabelled VPC left alone", ghost)
	})
}

func clusterSpec(name string, nodes int) fleet.Spec {
	s := spec(name, nodes, vultrType("vc2-2c-4gb"))
	s.Requirements.Regions = []string{"ewr"}
	s.Placement = fleet.PlacementCluster
	return s
}

func TestS09FlakyAttachAndPlansWithoutPrivateNetworking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.FlakyAttach(2))
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("s09", 2)))
		small := spec("small", 1, vultrType("vbm-4c-32gb"))
		small.Placement = fleet.PlacementCluster
		require.NoError(t, e.m.Apply(t.Context(), small))
		require.NoError(t, e.m.Apply(t.Context(), spec("plain", 1, vultrType("vbm-4c-32gb"))))
		e.run(15 * time.Minute)
		assert.Equal(t, 2, e.count(fleet.EventVPCAttached))
		vpcID := e.m.Instances("s09")[0].VPCID
		require.NotEmpty(t, vpcID)
		for _, inst := range e.m.Instances("s09") {
			assert.Equal(t, vpcID, inst.VPCID)
			ids, err := e.vp.InstanceVPCs(t.Context(), inst.ID)
			require.NoError(t, err)
			assert.Equal(t, []string{vpcID}, ids, "confirmed by listing the server's VPCs")
		}
		refused := calls(e.vultr.Calls(), "POST /v2/instances/{id}/vpcs/attach", 500)
		assert.GreaterOrEqual(t, refused, 2)
		assert.LessOrEqual(t, refused, 20, "attach backs off through the lock (every pass would be 30 tries)")
		assert.Empty(t, e.m.Instances("small"), "excluded from cluster placement up front")
		assert.Len(t, e.m.Instances("plain"), 1, "runs without a VPC outside a cluster")
		assert.Empty(t, e.m.Instances("plain")[0].VPCID)
	})
}

func TestS10VPCDeleteRefusedDuringTeardown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		linger := sim.DefaultVultrVMTiming()
		linger.AttachLinger = 3 * time.Minute // attachments outlive their servers
		require.NoError(t, e.vultr.SetTiming("vc2-*", linger))
		require.NoError(t, e.m.Apply(t.Context(), clusterSpec("s10", 2)))
		e.run(15 * time.Minute)
		require.Equal(t, 1, live(e.vultr.Resources(), "vpc"))
		require.NoError(t, e.m.Delete(t.Context(), "s10"))
		require.True(t, e.runUntil(time.Hour, func() bool { return e.count(fleet.EventFleetDeleted) == 1 }))
		assert.Positive(t, e.count(fleet.EventVPCDeleteRetry), "refused while attachments linger")
		assert.True(t, errHas(e.eventsOf(fleet.EventVPCDeleteRetry), "attached to this VPC network"))
		assert.Zero(t, e.count(fleet.EventOrphanFound), "its own VPC, just deleted, is no orphan")
		e.assertNothingLeft()
	})
}

func TestS11BareMetalTakesFortyMinutes(t *testing.T) {
	t.Run("slow but healthy: kept", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, fleet.Policy{})
			require.NoError(t, e.m.Apply(t.Context(), spec("s11", 1, vultrType(mi300x))))
			e.run(50 * time.Minute)
			assert.Equal(t, 1, e.count(fleet.EventSlowProvisioning), "warned up front")
			assert.Zero(t, e.count(fleet.EventDeadlineMissed))
			inst := e.only("s11")
			assert.Equal(t, fleet.StatusIdle, inst.Status)
			assert.GreaterOrEqual(t, inst.Ready.Sub(inst.Created), 40*time.Minute)
		})
	})
	t.Run("never active: released at the deadline, deletion verified", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, fleet.Policy{})
			require.NoError(t, e.vultr.SlowProvisioning("vbm-*", 90*time.Minute))
			r := vultrType(mi300x)
			r.Regions = []string{"ord"}
			require.NoError(t, e.m.Apply(t.Context(), spec("s11", 1, r)))
			e.run(56 * time.Minute)
			missed := e.eventsOf(fleet.EventDeadlineMissed)
			require.Len(t, missed, 1)
			assert.Equal(t, fleet.StatusTerminating, e.only("s11").Status)
			require.True(t, e.runUntil(2*time.Hour, e.terminated("s11")))
			assert.Zero(t, e.liveServers())
			assert.Len(t, e.m.Instances("s11"), 1, "the offer that missed its deadline is not tried again at once")
			assert.InDelta(t, 2*17.52, e.vultr.Ledger().TotalUSD, 0.01, "two started hours")
		})
	})
}

func TestS12FailoverKeepsTheFailedAttemptTracked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		r := vultrType(vm)
		r.Regions = []string{"ewr", "ord"}
		require.NoError(t, e.m.Apply(t.Context(), spec("s12", 1, r)))
		require.NoError(t, e.m.Reconcile(t.Context()))
		a := e.only("s12")
		require.Equal(t, "ewr", a.Offer.Region, "the first offer tried")
		require.NoError(t, e.vultr.SetServerTiming(a.ID, sim.VultrTiming{Pending: 2 * time.Hour}))
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "DELETE /v2/instances/{id}", Times: 3, Status: 500}))
		e.run(30 * time.Minute)
		insts := e.m.Instances("s12")
		require.Len(t, insts, 2, "the failed attempt counts in the fleet")
		assert.Equal(t, fleet.StatusTerminating, insts[0].Status)
		assert.Equal(t, "ord", insts[1].Offer.Region, "moved on to the next offer")
		assert.Equal(t, fleet.StatusIdle, insts[1].Status)
		require.True(t, e.runUntil(3*time.Hour, func() bool { return e.m.Instances("s12")[0].Status == fleet.StatusTerminated }))
		assert.Equal(t, 1, e.liveServers())
	})
}

func TestS13RateLimitUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("s13", 200, vultrVM("ewr"))))
		e.run(20 * time.Minute)
		insts := e.m.Instances("s13")
		require.Len(t, insts, 200)
		for _, i := range insts {
			require.Equal(t, fleet.StatusIdle, i.Status)
		}
		log := e.vultr.Calls()
		perSecond := map[int64]int{}
		for _, c := range log {
			perSecond[c.Time.Unix()]++
		}
		for sec, n := range perSecond {
			assert.LessOrEqual(t, n, 30, "second %d", sec)
		}
		assert.Zero(t, calls(log, "", http.StatusTooManyRequests))
		e.vultr.ResetCalls()
		e.run(5 * time.Minute) // steady state: 30 passes
		log = e.vultr.Calls()
		assert.Zero(t, calls(log, "GET /v2/instances/{id}", 0), "no GET per instance")
		assert.LessOrEqual(t, calls(log, "GET /v2/instances", 0), 30*2, "one list (two pages of 100) per pass")
		t.Logf("API calls to create and watch 200 instances for 20 min: %d", len(e.vultr.Calls())+len(log))
	})
}

func TestS14MoreThanOnePage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OrphanGrace: 5 * time.Minute, Release: fleet.ReleaseNow})
		for i := range 150 {
			_, err := e.vultr.SeedServer(sim.VultrSeed{Plan: vm, Region: "ewr", Age: 2 * time.Hour,
				Label: fleet.Label{Owner: testOwner, Fleet: "ghost", RequestID: fmt.Sprintf("%012x", i)}.String()})
			require.NoError(t, err)
		}
		e.run(time.Minute)
		assert.Equal(t, 150, e.count(fleet.EventOrphanFound), "every page read")
		e.run(30 * time.Minute)
		assert.Zero(t, e.liveServers(), "garbage collection saw all 150")
		assert.Positive(t, calls(e.vultr.Calls(), "GET /v2/instances", 0))
	})
}
