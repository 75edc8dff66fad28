package fleet_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An orphan's grace across a failover of the collector (the replica holding
// the "gc" lease, which tracks orphans): a Hot Aisle VM of fleet "gone" is
// left by a Manager whose Store was lost, 35 minutes into its rental (past
// its 30-minute minimum: every minute billed). Two replicas start on an
// empty store; the collector finds it and plans its release OrphanGrace (10
// min) later. The replica that found it dies 8 minutes after the find
// (before the release): the orphan must still go when its grace ends
// (Policy.OrphanGrace: "left alone [this long] before it is deleted"):
// billed to the first find's release time, a minute more at most. Or its
// DELETEs are refused (500) from 9 to 13 minutes after the find and the
// collector dies 30 s into its release: the release goes on, billed to the
// refusals' end, 3 minutes more at most. The collector stores orphan
// records (without a lease), and the replica taking the collector lease
// over reads them.
//
// (tester AP, killed at 8 min: found at 35:00, release planned 45:00, its
// finder killed at 43:00, found again by the other replica at 48:30 with a
// new 10-minute grace, released at 58:30: 59 minutes billed instead of 45
// before; in replica mode orphan records were never written to the store.)
func TestOrphanGraceSurvivesTheCollectorsDeath(t *testing.T) {
	for _, c := range []struct {
		name    string
		kill    time.Duration // from the find
		refused time.Duration // DELETEs refused from 9 min after the find, this long
	}{
		{"killed before the release", 8 * time.Minute, 0},
		{"killed while its delete is refused", 10*time.Minute + 30*time.Second, 4 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				stop := e.running()
				e.idleFleet("gone", 1, 0, hotType("vm-mi300x-1"))
				stop()
				e.m.Close()
				from := apCharge(t, e).From
				time.Sleep(time.Until(from.Add(35 * time.Minute)))
				store := fleet.NewMemoryLeaseStore(nil)
				rs, finderp := orphanCollectors(t, e, store) // the replica that found the orphan first
				for time.Now().Before(from.Add(50*time.Minute)) && e.count(fleet.EventOrphanFound) == 0 {
					time.Sleep(5 * time.Second)
				}
				found := e.eventsOf(fleet.EventOrphanFound)[0]
				end := found.At.Sub(from) + time.Minute
				if c.refused > 0 {
					time.Sleep(time.Until(found.Time.Add(9 * time.Minute)))
					require.NoError(t, e.hot.Inject(sim.Fault{Route: hotDeleteRoute, Status: 500, Duration: c.refused}))
					end = 9*time.Minute + found.Time.Sub(from) + c.refused + 3*time.Minute
				}
				time.Sleep(time.Until(found.Time.Add(c.kill)))
				e.mu.Lock()
				dead := *finderp
				e.mu.Unlock()
				rs.stop(dead)
				ch := chargeOnceReleased(t, e, rs, from, 3*time.Hour)
				t.Logf("found %v (release at %v), billed %v", found.Time.Sub(from), found.At.Sub(from), ch.Billed)
				assert.LessOrEqual(t, ch.Billed, end)
			})
		})
	}
}

// orphanCollectors starts two replicas (owner testOwner) on store, their
// events in e's log, and returns them with the index of the one that says
// EventOrphanFound first (-1 until one does; read once it has).
func orphanCollectors(t *testing.T, e *env, store fleet.LeaseStore) (*replicaSet, *int) {
	t.Helper()
	rs := &replicaSet{e: e, store: store}
	finder := new(int)
	*finder = -1
	for i := range 2 {
		m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: testOwner, Store: store,
			ReplicaID: fmt.Sprintf("r%d", i),
			OnEvent: func(ev fleet.Event) {
				e.mu.Lock()
				if ev.Type == fleet.EventOrphanFound && *finder < 0 {
					*finder = i
				}
				e.events = append(e.events, ev)
				e.mu.Unlock()
			}})
		require.NoError(t, err)
		t.Cleanup(m.Close)
		rs.ms = append(rs.ms, m)
		rs.cancels = append(rs.cancels, nil)
		rs.dones = append(rs.dones, nil)
		rs.start(i)
	}
	return rs, finder
}
