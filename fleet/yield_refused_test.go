package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hold's yield to a fleet refused as sold out picks only nodes an idle
// release can take: not one whose fleet is at its MinNodes, nor one whose
// fleet's IdleTimeout is 0 (Spec.MinNodes, Spec.IdleTimeout: such a node
// is kept, it is no spare held for a next job). Hot Aisle bare metal, a
// pool of 2: fleet "a1" (Nodes 1, MinNodes 1; or IdleTimeout 0) and fleet
// "a2" (Nodes 1) each ran a job to 8:30; both servers idle, held by the
// default hold. At 9:00 fleet "b" applies 1 node and is refused as sold
// out: a2's server yields, b is served within ~30 min.
//
// (tester AY: before the fix, the yield picked a1's server, which nothing
// released, and counted it against b's need, so a2's server did not
// yield either: b waited 7h41m, until a2's hold ended.)
func TestHoldYieldPicksOnlyReleasableNodes(t *testing.T) {
	for _, c := range []struct {
		name     string
		idle     time.Duration
		minNodes int
	}{{"MinNodes1", 5 * time.Minute, 1}, {"IdleTimeout0", 0, 0}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				s := spec("a1", 1, hotType("bm-mi300x-8"))
				s.IdleTimeout, s.MinNodes = c.idle, c.minNodes
				require.NoError(t, e.m.Apply(t.Context(), s))
				require.True(t, e.runUntil(time.Hour, func() bool {
					a := activeOf(e.m.Instances("a1"))
					return len(a) == 1 && a[0].Status == fleet.StatusIdle
				}))
				e.idleFleet("a2", 1, 5*time.Minute, hotType("bm-mi300x-8"))
				stop := e.running()
				defer stop()
				from := jobsUntil(t, e, 8*time.Hour+30*time.Minute, "a1", "a2")
				time.Sleep(time.Until(from.Add(9 * time.Hour)))
				_, wait := applyUntilServed(t, e, "b", 20*time.Hour)
				for _, ch := range servers(e.hot.Ledger().Charges) {
					t.Logf("%s billed %v (%s)", ch.ResourceID, ch.Billed, ch.Description)
				}
				for _, ev := range e.eventsOf(fleet.EventReleaseRequested) {
					t.Logf("+%v %s %s: %s", ev.Time.Sub(from).Round(time.Second), ev.Fleet, ev.InstanceID, ev.Message)
				}
				t.Logf("b waited %v", wait)
				assert.LessOrEqual(t, wait, 30*time.Minute, "%s: fleet b waited %v: the yield went to a node no idle release of its fleet takes", c.name, wait)
				assert.Len(t, activeOf(e.m.Instances("a1")), 1, "%s: a1's kept server released", c.name)
			})
		})
	}
}

// A re-buy hold yields to a fleet refused for the team's instance limit as
// to one refused as sold out: a Hot Aisle team's maximum_bare_metal_servers
// and maximum_virtual_machines (403 "tenant limit exceeded", 401 "Maximum
// VMs already provisioned for this team": ErrQuotaExceeded) are the same
// stock seen from the account. Hot Aisle bare metal, team limit 1 server:
// a's job runs to 8:30 after its server's billing start, the default hold
// keeps the server; at 9:00 fleet b applies 1 node: served within about
// one install (30 min). The same with VMs (team limit 2, fleet a ran 2
// jobs to 35:00, b applies at 40:00): within 10 min. Once the yielded node
// is confirmed gone, the provider's create hold is lifted: b's create is
// tried at once.
//
// (tester AY: before the fix, the refusal for the limit did not make the
// hold yield, and it stopped all of Hot Aisle's creates for 10 min to 1 h:
// b waited until a's hold ended and ~50 min more.)
func TestHoldYieldsToAFleetRefusedForTheTeamLimit(t *testing.T) {
	for _, c := range []struct {
		typ             string
		vms, bms, nodes int
		until, apply    time.Duration
		wait            time.Duration
	}{
		{"bm-mi300x-8", 10, 1, 1, 8*time.Hour + 30*time.Minute, 9 * time.Hour, 30 * time.Minute},
		{"vm-mi300x-1", 2, 5, 2, 35 * time.Minute, 40 * time.Minute, 10 * time.Minute},
	} {
		t.Run(c.typ, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{}, sim.WithHotAisleLimits(c.vms, c.bms))
				e.idleFleet("a", c.nodes, 5*time.Minute, hotType(c.typ))
				stop := e.running()
				defer stop()
				names := []string{}
				for range c.nodes {
					names = append(names, "a")
				}
				from := jobsUntil(t, e, c.until, names...)
				time.Sleep(time.Until(from.Add(c.apply)))
				s := spec("b", 1, hotType(c.typ))
				s.IdleTimeout = 5 * time.Minute
				require.NoError(t, e.m.Apply(t.Context(), s))
				asked := time.Now()
				y := acquireWithin(t, e, "b", 20*time.Hour)
				wait := time.Since(asked)
				require.NoError(t, e.m.MarkIdle(y.ID))
				var held time.Duration
				usd := 0.0
				for _, ch := range servers(e.hot.Ledger().Charges) {
					if ch.From.Before(asked) {
						t.Logf("a's %s billed %v by then (%s)", ch.ResourceID, ch.To.Sub(ch.From), ch.Description)
						if end := ch.To; end.After(asked) {
							held += end.Sub(asked)
							usd += end.Sub(asked).Hours() * ch.RateUSD
						}
					}
				}
				t.Logf("b waited %v; a's idle holds billed %v ($%.2f) past b's Apply", wait, held, usd)
				for _, ev := range e.eventsOf(fleet.EventCreatesRefused) {
					t.Logf("event %s: %s (%s)", ev.Type, ev.Message, ev.Err)
				}
				assert.LessOrEqual(t, wait, c.wait, "fleet b waited %v while fleet a's held idle nodes filled the team's limit", wait)
				assert.Len(t, yieldedTo(e, "b", asked), 1, "b lacks one node")
			})
		})
	}
}

// A deleted (or scaled-down to 0) fleet's Hot Aisle servers whose release
// waits for their minimum's end (paid anyway) give way to another fleet of
// the Manager refused that stock as sold out: such a release goes at once,
// forced (the minimum is charged whole either way, so it costs nothing
// more), counted like a hold's yield. Hot Aisle bare metal, a pool of 2:
// fleet "a" runs 2 jobs to 1:00 after its servers' billing start and is
// deleted (or applied with 0 nodes) then; at 1:30 fleet "b" applies 1
// node: served within about one install (30 min); one of a's servers
// only goes early, the other waits for its minimum's end.
//
// (tester AY: before the fix, a's servers waited to their minimum's end:
// b waited 6h41m.)
func TestWaitingReleaseGivesWayToARefusedFleet(t *testing.T) {
	for _, how := range []string{"delete", "shrink"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				e.idleFleet("a", 2, 5*time.Minute, hotType("bm-mi300x-8"))
				stop := e.running()
				defer stop()
				from := jobsUntil(t, e, time.Hour, "a", "a")
				if how == "delete" {
					require.NoError(t, e.m.Delete(t.Context(), "a"))
				} else { // Apply Nodes 0: the scale-down waits for the minimum's end too
					s := spec("a", 0, hotType("bm-mi300x-8"))
					s.IdleTimeout = 5 * time.Minute
					require.NoError(t, e.m.Apply(t.Context(), s))
				}
				time.Sleep(time.Until(from.Add(90 * time.Minute)))
				asked, wait := applyUntilServed(t, e, "b", 20*time.Hour)
				early := 0
				for _, ch := range servers(e.hot.Ledger().Charges) {
					t.Logf("%s billed %v, live %v, to +%v (%s)", ch.ResourceID, ch.Billed, ch.Live, ch.To.Sub(from).Round(time.Second), ch.Description)
					if ch.From.Before(asked) && !ch.Live && ch.To.Before(from.Add(7*time.Hour)) {
						early++
					}
				}
				t.Logf("%s: b waited %v for a server while fleet a's two servers sat idle to their minimum's end", how, wait)
				assert.LessOrEqual(t, wait, 30*time.Minute, "%s: fleet b waited %v for stock held by fleet a's released idle servers", how, wait)
				assert.Equal(t, 1, early, "%s: b lacks one server; a's servers released early for it", how)
				assert.Len(t, yieldedTo(e, "b", asked), 1, "%s: the early release says it gives way to b", how)
			})
		})
	}
}

// A release that waits for its minimum's end gives way only with no job
// on the node: fleet "a" is deleted at 1:00 while both its Hot Aisle
// bare-metal servers (the pool) run jobs, so their releases wait for the
// minimum's end and the jobs may run on until then. Fleet "b", applied at
// 1:30, is refused as sold out: neither server is released early for it.
func TestWaitingReleaseOfABusyNodeDoesNotGiveWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.idleFleet("a", 2, 5*time.Minute, hotType("bm-mi300x-8"))
		stop := e.running()
		defer stop()
		var jobs []fleet.Instance
		for range 2 {
			x, err := e.m.Acquire(t.Context(), "a")
			require.NoError(t, err)
			jobs = append(jobs, x)
		}
		from := serverCharge(e, jobs[0].ID).From
		time.Sleep(time.Until(from.Add(time.Hour)))
		require.NoError(t, e.m.Delete(t.Context(), "a"))
		time.Sleep(time.Until(from.Add(90 * time.Minute)))
		s := spec("b", 1, hotType("bm-mi300x-8"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		asked := time.Now()
		time.Sleep(2 * time.Hour)
		for _, x := range jobs {
			c := serverCharge(e, x.ID)
			assert.True(t, c.Live, "%s released under its job (%s)", x.ID, c.Description)
		}
		assert.Empty(t, yieldedTo(e, "b", asked))
	})
}

// A refusal for the account's instance limit counts for the limit's kind
// only (Hot Aisle's team limits are one for VMs, one for bare-metal
// servers): fleet "a" holds an idle VM past its minimum (a fixed hold of
// one spare for 10 hours, job to 35:00), fleet "c" has the team's one
// bare-metal server (no job yet). Fleet "b", applied at 40:00 with one
// bare-metal node, is refused for the limit: a's VM frees no place under
// it and stays.
func TestHoldYieldsToTheLimitOfItsOwnKindOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 10 * time.Hour}, sim.WithHotAisleLimits(10, 1))
		e.idleFleet("c", 1, 5*time.Minute, hotType("bm-mi300x-8"))
		e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		defer stop()
		x, _ := jobThenIdle(t, e, "a", 35*time.Minute, 40*time.Minute)
		s := spec("b", 1, hotType("bm-mi300x-8"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		asked := time.Now()
		time.Sleep(30 * time.Minute)
		require.NotEmpty(t, e.eventsOf(fleet.EventCreatesRefused), "b's create refused for the limit")
		assert.True(t, serverCharge(e, x.ID).Live, "a's held VM released for a bare-metal limit")
		assert.Empty(t, yieldedTo(e, "b", asked))
	})
}

// A refusal for the account's instance limit holds the creates of its kind
// only: the team's one VM is fleet "c"'s; fleet "v" asks for a second VM
// and is refused for the limit; fleet "m", applied a minute later with one
// bare-metal server (the team may have 10), is created at once and is
// ready after one bare-metal boot, while v's VM creates stay held.
// (Before: the refusal held every Hot Aisle create 10 minutes to an hour,
// so m's server was created only after the hold.)
func TestLimitRefusalHoldsItsKindOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{}, sim.WithHotAisleLimits(1, 10))
		e.idleFleet("c", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		defer stop()
		v := spec("v", 1, hotType("vm-mi300x-1"))
		v.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), v))
		for deadline := time.Now().Add(10 * time.Minute); len(e.eventsOf(fleet.EventCreatesRefused)) == 0; time.Sleep(time.Second) {
			require.True(t, time.Now().Before(deadline), "v's create was not refused for the limit")
		}
		time.Sleep(time.Minute)
		ms := spec("m", 1, hotType("bm-mi300x-8"))
		ms.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), ms))
		asked := time.Now()
		waited := untilServed(t, e, "m", asked, 2*time.Hour)
		t.Logf("m served after %v; refusals: %v", waited, e.eventsOf(fleet.EventCreatesRefused))
		assert.Less(t, waited, 11*time.Minute, "the bare-metal create waited for a VM limit's hold (one boot is 10m10s)")
		assert.Len(t, servers(e.hot.Ledger().Charges), 2, "c's VM and m's server only: v's VM creates stay held")
		assert.Len(t, e.eventsOf(fleet.EventCreatesRefused), 1, "one alert for the VM limit's spell, which m's bare-metal create does not end")
	})
}
