package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every replica is down for 25 minutes (a bad rollout, or the database
// unreachable that long) right after a create was answered and stored as
// provisioning; the VM itself came up a minute later and has been running
// since. When a replica comes back and takes the fleet, the user expects
// it to look at the provider before judging the stored record: the running
// VM is kept, not released for "provisioning deadline passed" and created
// again (issue 14 point 3: 0 instances created twice, every fleet
// converges; a Hot Aisle VM released that way also loses its minimum
// reservation).
func TestTakeoverAfterLongOutageKeepsRunningVM(t *testing.T) {
	for _, c := range []struct {
		name string
		req  fleet.Requirements
	}{{"vultr", vultrVM("ewr")}} { // Hot Aisle's fake VMs run at once: no provisioning record to judge
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				store := fleet.NewMemoryLeaseStore(nil)
				rs := newReplicaSet(t, e, store, 2)
				require.NoError(t, rs.ms[0].Apply(t.Context(), spec("st", 1, c.req)))
				for deadline := time.Now().Add(10 * time.Minute); e.count(fleet.EventInstanceCreated) == 0; time.Sleep(time.Second) {
					require.True(t, time.Now().Before(deadline), "no create")
				}
				time.Sleep(2 * time.Second) // the provisioning record is written
				recs, err := store.Instances(t.Context())
				require.NoError(t, err)
				require.Len(t, recs, 1)
				require.Equal(t, fleet.StatusProvisioning, recs[0].Instance.Status, "stored before the VM ran")
				rs.stopAll()
				time.Sleep(25 * time.Minute)
				require.Equal(t, 1, e.liveServers(), "the VM runs meanwhile")
				rs.start(1)
				time.Sleep(30 * time.Minute)
				assert.Zero(t, e.count(fleet.EventDeadlineMissed), "a running VM judged by its stored status: %v",
					e.eventsOf(fleet.EventDeadlineMissed))
				assert.True(t, converged(t, store, map[string]int{"st": 1}), "converged")
				assert.Equal(t, 1, createdRequests(t, e), "one create for one node")
				require.NoError(t, rs.ms[1].Delete(t.Context(), "st"))
				time.Sleep(2 * time.Hour)
				rs.stop(1)
				e.assertNothingLeft()
			})
		})
	}
}

// The same with one Manager (no replicas) restarted on its Store after 25
// minutes down: does it judge the stored record before looking?
func TestRestartAfterLongOutageKeepsRunningVM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("st", 1, vultrVM("ewr"))))
		require.True(t, e.runUntil(10*time.Minute, func() bool { return e.count(fleet.EventInstanceCreated) > 0 }))
		require.NoError(t, e.m.Reconcile(t.Context()))
		recs, err := e.store.Instances(t.Context())
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, fleet.StatusProvisioning, recs[0].Instance.Status, "stored before the VM ran")
		e.m.Close()
		time.Sleep(25 * time.Minute)
		e.m = e.manager(e.store)
		e.run(30 * time.Minute)
		assert.Zero(t, e.count(fleet.EventDeadlineMissed), "a running VM judged by its stored status: %v",
			e.eventsOf(fleet.EventDeadlineMissed))
		assert.Equal(t, 1, createdRequests(t, e), "one create for one node")
		require.NoError(t, e.m.Delete(t.Context(), "st"))
		e.run(2 * time.Hour)
		e.assertNothingLeft()
	})
}
