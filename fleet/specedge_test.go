package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (w *t8World) alive(fleetName string) int {
	n := 0
	for _, r := range w.m.Records() {
		if r.Instance.Fleet == fleetName && r.Termination == nil && r.Instance.Status != fleet.StatusTerminated {
			n++
		}
	}
	return n
}

// TestRapidResize: Nodes 0→5→0→3 five seconds apart, creates slow
// (2 min), release policies switched at each Apply. The fleet must settle
// at 3 tracked members, create at most 8 servers, and leave nothing after
// Delete.
func TestRapidResize(t *testing.T) {
	for _, c := range t8Clouds {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newT8World(t, 30*time.Second, fleet.NewMemoryStore(), fleet.Policy{})
				injectSlowCreates(t, w, c, 2*time.Minute)
				pols := []fleet.ReleasePolicy{fleet.ReleaseNow, fleet.ReleaseAtReservationEnd, "", fleet.ReleaseNow}
				for k, n := range []int{0, 5, 0, 3} {
					require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "rr", Nodes: n, Requirements: c.req, ReleasePolicy: pols[k]}))
					time.Sleep(5 * time.Second)
				}
				time.Sleep(90 * time.Minute)
				assert.Equal(t, 3, w.alive("rr"), "members after settling")
				live := 0
				for _, r := range w.liveServers() {
					_ = r
					live++
				}
				assert.Equal(t, 3, live, "live servers after settling")
				assert.LessOrEqual(t, w.createdServers(), 8)
				t.Logf("%s: %d servers created", c.name, w.createdServers())
				w.waitGone(t, 3*time.Hour)
				w.stop()
				w.assertNoLeak(t)
				if t.Failed() {
					w.dumpEvents(t)
				}
			})
		})
	}
}

// TestIdleMinNodes: Nodes 3, MinNodes 2, IdleTimeout 10 min: the
// fleet shrinks to 2 and no lower; a fleet with IdleTimeout 0 keeps its 3.
func TestIdleMinNodes(t *testing.T) {
	for _, c := range t8Clouds {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newT8World(t, 0, fleet.NewMemoryStore(), fleet.Policy{})
				require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "idle", Nodes: 3, MinNodes: 2, IdleTimeout: 10 * time.Minute, Requirements: c.req}))
				require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "keep", Nodes: 2, Requirements: c.req}))
				time.Sleep(4 * time.Hour)
				assert.Equal(t, 2, w.alive("idle"))
				assert.Equal(t, 2, w.alive("keep"))
				assert.Equal(t, 5, w.createdServers())
				for _, s := range w.m.Fleets() {
					if s.Name == "idle" {
						assert.Equal(t, 2, s.Nodes)
					}
				}
				w.waitGone(t, 3*time.Hour)
				w.stop()
				w.assertNoLeak(t)
				if t.Failed() {
					w.dumpEvents(t)
				}
			})
		})
	}
}

// TestReapplyOtherProvider: a 2-node fleet on one cloud re-applied
// with the other cloud's requirements (and then another Vultr region)
// while its members exist: members stay, nothing new is created, and
// Delete leaves nothing on either cloud.
func TestReapplyOtherProvider(t *testing.T) {
	for k, c := range t8Clouds {
		other := t8Clouds[1-k]
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newT8World(t, 0, fleet.NewMemoryStore(), fleet.Policy{})
				require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "mv", Nodes: 2, Requirements: c.req}))
				time.Sleep(20 * time.Minute)
				require.Equal(t, 2, w.alive("mv"))
				require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "mv", Nodes: 2, Requirements: other.req}))
				time.Sleep(20 * time.Minute)
				req := t8Clouds[0].req
				req.Regions = []string{"lax"}
				require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "mv", Nodes: 3, Requirements: req}))
				time.Sleep(30 * time.Minute)
				assert.Equal(t, 3, w.alive("mv"))
				assert.Equal(t, 3, w.createdServers())
				w.waitGone(t, 3*time.Hour)
				w.stop()
				w.assertNoLeak(t)
				if t.Failed() {
					w.dumpEvents(t)
				}
			})
		})
	}
}
