package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A held node powered off out of band and started again
// (OnStoppedRestart) keeps "when it went idle and whether a job ended on
// it: it goes when it would have without the stop" (Spec.IdleTimeout).
// Without the stop the re-buy hold keeps it. Hot Aisle VM (fixed hold of
// one spare for 30 min; job to 35:00, held to 65:00, halted out of band at
// 40:00, next job at 55:00) and bare metal (default hold; job to 8:30,
// halted at 9:00, next job at 10:00). The next job should find the held
// node (once it is up again) rather than a new minimum be bought: the
// orchestrator Applies one more node when Acquire answers ErrNoIdle.
//
// (tester AY: before the fix, the VM was released at 40:10 instead of
// kept to 65:00 and the job at 55:00 bought a new minimum; the bare metal
// server was released at 9:00:21, and the job at 10:00 bought a new 8-h
// minimum, $216.96, and waited 10m10s.)
func TestHeldNodeStoppedAndRestartedKeepsItsHold(t *testing.T) {
	for _, c := range []struct {
		typ                  string
		pol                  fleet.Policy
		jobEnd, halt, nextAt time.Duration
	}{
		{"vm-mi300x-1", fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute}, 35 * time.Minute, 40 * time.Minute, 55 * time.Minute},
		{"bm-mi300x-8", fleet.Policy{}, 8*time.Hour + 30*time.Minute, 9 * time.Hour, 10 * time.Hour},
	} {
		t.Run(c.typ, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c.pol.OnStopped = fleet.OnStoppedRestart
				e := newEnv(t, c.pol)
				e.idleFleet("a", 1, 5*time.Minute, hotType(c.typ))
				stop := e.running()
				defer stop()
				x, from := jobThenIdle(t, e, "a", c.jobEnd, c.halt)
				require.NoError(t, e.hot.HaltOutOfBand(x.ID))
				time.Sleep(time.Until(from.Add(c.nextAt)))
				for _, ev := range e.eventsOf(fleet.EventInstanceStopped) {
					t.Logf("+%v %s: %s", ev.Time.Sub(from).Round(time.Second), ev.Type, ev.Message)
				}
				ch := serverCharge(e, x.ID)
				t.Logf("held node at +%v: live %v, billed %v (to +%v)", c.nextAt, ch.Live, ch.Billed, ch.To.Sub(ch.From).Round(time.Second))
				if _, err := e.m.Acquire(t.Context(), "a"); err == nil {
					return // handed out at once
				}
				s := spec("a", 1, hotType(c.typ))
				s.IdleTimeout = 5 * time.Minute
				if n := e.m.Fleets()[0].Nodes; n == 0 {
					require.NoError(t, e.m.Apply(t.Context(), s)) // the orchestrator grows its fleet for the job
				}
				y := acquireWithin(t, e, "a", 2*time.Hour)
				t.Logf("the job at +%v got %s after %v (held node %s)", c.nextAt, y.ID, time.Since(from.Add(c.nextAt)), x.ID)
				usd := 0.0
				for i, ch := range servers(e.hot.Ledger().Charges) {
					t.Logf("charge %s billed %v $%.2f live %v", ch.ResourceID, ch.Billed, ch.USD, ch.Live)
					if i > 0 {
						usd += ch.USD
					}
				}
				assert.Equal(t, x.RequestID, y.RequestID, "the held node was dropped after its restart; the job bought a new minimum ($%.2f so far)", usd)
				require.NoError(t, e.m.MarkIdle(y.ID))
			})
		})
	}
}

// An idle node destroyed out of band (a console delete, a provider's
// reclaim) in a fleet whose idle nodes go: as for an idle node stopped out
// of band (OnStoppedReplace), it would have been released for idleness,
// and a replacement only buys a new billing unit no job asked for. Hot
// Aisle bare metal held by the default re-buy hold after a job to 8:30,
// destroyed at 9:00; Hot Aisle VM (fixed hold) after a job to 35:00,
// destroyed at 40:00; Vultr VM idle since its job ended at 10:00,
// destroyed at 20:00. No job comes for 9 hours: expected no new server.
//
// (tester AY: before the fix, each was replaced: bare metal $216.96, Hot
// Aisle VM $2.99, Vultr VM a new hour $2.40.)
func TestIdleNodeDestroyedOutOfBandIsNotReplaced(t *testing.T) {
	for _, c := range []struct {
		name, cloud string
		req         fleet.Requirements
		pol         fleet.Policy
		jobEnd, oob time.Duration
	}{
		{"hotaisle-bm", "hotaisle", hotType("bm-mi300x-8"), fleet.Policy{}, 8*time.Hour + 30*time.Minute, 9 * time.Hour},
		{"hotaisle-vm", "hotaisle", hotType("vm-mi300x-1"), fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute}, 35 * time.Minute, 40 * time.Minute},
		{"vultr-vm", "vultr", vultrType("vcg-a100-12c-120g-80vram"), fleet.Policy{}, 10 * time.Minute, 20 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, c.pol)
				e.idleFleet("a", 1, 5*time.Minute, c.req)
				stop := e.running()
				defer stop()
				x, _ := jobThenIdle(t, e, "a", c.jobEnd, c.oob)
				require.True(t, serverCharge(e, x.ID).Live, "released before the destroy")
				if c.cloud == "vultr" {
					require.NoError(t, e.vultr.DestroyOutOfBand(x.ID))
				} else {
					require.NoError(t, e.hot.DestroyOutOfBand(x.ID))
				}
				time.Sleep(9 * time.Hour)
				var extra []string
				usd := 0.0
				for i, ch := range servers(append(e.vultr.Ledger().Charges, e.hot.Ledger().Charges...)) {
					if i > 0 {
						extra = append(extra, ch.ResourceID+" billed "+ch.Billed.String()+" ("+ch.Description+")")
						usd += ch.USD
					}
				}
				t.Logf("fleet a now wants %d nodes; servers bought after the destroy: %v", e.m.Fleets()[0].Nodes, extra)
				assert.Empty(t, extra, "a replacement bought for an idle node destroyed out of band, no job asked: $%.2f", usd)
			})
		})
	}
}

// The held node of TestHeldNodeStoppedAndRestartedKeepsItsHold with no job
// after the restart, and its agent unreachable until after the hold's end
// (the machine slow to boot again): it still goes when the hold ends, as
// it would have without the stop — 35:00 + 30 min, 10 s early on the
// minute boundary: 65 minutes billed — while it boots again.
// Before the fix: released at the stop (41 minutes billed), the hold lost.
func TestHeldNodeBootingAgainGoesWhenItsHoldEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute, OnStopped: fleet.OnStoppedRestart, AgentTimeout: time.Hour})
		agent := &powerAgent{down: map[string]bool{}}
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: testOwner, Agent: agent})
		e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		defer stop()
		x, from := jobThenIdle(t, e, "a", 35*time.Minute, 40*time.Minute)
		agent.set(x.ID, true)
		require.NoError(t, e.hot.HaltOutOfBand(x.ID))
		time.Sleep(time.Until(from.Add(80 * time.Minute)))
		agent.set(x.ID, false)
		for end := time.Now().Add(3 * time.Hour); time.Now().Before(end) && serverCharge(e, x.ID).Live; {
			time.Sleep(time.Minute)
		}
		c := serverCharge(e, x.ID)
		require.NotEmpty(t, e.eventsOf(fleet.EventInstanceStopped), "the halt was seen")
		t.Logf("billed %v, released +%v (%s)", c.Billed, c.To.Sub(c.From).Round(time.Second), c.Description)
		assert.False(t, c.Live)
		assert.Equal(t, 65*time.Minute, c.Billed, "a held node restarted after a stop out of band goes when its hold ends")
		assert.Len(t, servers(e.hot.Ledger().Charges), 1, "no other server bought")
	})
}

// A node destroyed out of band that a job, or the fleet's floor, still
// wants is replaced (DESIGN: drift is handled by release and replace): one
// busy (handed out, no MarkIdle), one idle in a fleet at its MinNodes, one
// idle in a fleet whose idle nodes never go (IdleTimeout 0), one idle when
// an Apply raised Nodes to 2 (wanted by that growth: the Apply comes just
// before the destroy, its new node's create answers 30 minutes later). Hot Aisle VM, destroyed
// 10 minutes after its billing start. An idle one in a fleet whose idle
// nodes go is not, and InstanceVanished says so.
func TestNodeDestroyedOutOfBandReplacedWhenWanted(t *testing.T) {
	for _, c := range []struct {
		name     string
		busy     bool
		idle     time.Duration
		minNodes int
		replaced bool
	}{
		{"busy", true, 5 * time.Minute, 0, true},
		{"MinNodes", false, 5 * time.Minute, 1, true},
		{"IdleTimeout0", false, 0, 0, true},
		{"growth", false, 5 * time.Minute, 0, true},
		{"idle", false, 5 * time.Minute, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				s := spec("a", 1, hotType("vm-mi300x-1"))
				s.IdleTimeout, s.MinNodes = c.idle, c.minNodes
				require.NoError(t, e.m.Apply(t.Context(), s))
				stop := e.running()
				defer stop()
				x := acquireWithin(t, e, "a", time.Hour)
				if !c.busy {
					require.NoError(t, e.m.MarkIdle(x.ID))
				}
				from := serverCharge(e, x.ID).From
				if c.name == "growth" {
					time.Sleep(time.Until(from.Add(10*time.Minute - 2*time.Second)))
					s.Nodes = 2
					e.slowCreates("hotaisle", 30*time.Minute, 1) // the growth's node comes after the destroy is seen
					require.NoError(t, e.m.Apply(t.Context(), s))
				}
				time.Sleep(time.Until(from.Add(10 * time.Minute)))
				require.NoError(t, e.hot.DestroyOutOfBand(x.ID))
				for end := time.Now().Add(time.Hour); e.count(fleet.EventInstanceVanished) == 0; time.Sleep(time.Second) {
					require.True(t, time.Now().Before(end), "the destroy was not seen")
				}
				nodes := e.m.Fleets()[0].Nodes
				time.Sleep(time.Hour)
				vanished := e.eventsOf(fleet.EventInstanceVanished)
				require.Len(t, vanished, 1)
				t.Logf("%s: %s; fleet wanted %d nodes then; servers %d", c.name, vanished[0].Message, nodes, len(servers(e.hot.Ledger().Charges)))
				if c.replaced {
					assert.Equal(t, s.Nodes, nodes, "the fleet lowered")
					assert.NotContains(t, vanished[0].Message, "not replaced")
					if c.name != "growth" { // the slow create's retries buy more
						assert.Len(t, servers(e.hot.Ledger().Charges), 2, "not replaced")
					}
					return
				}
				assert.Len(t, servers(e.hot.Ledger().Charges), 1, "replaced")
				assert.Contains(t, vanished[0].Message, "not replaced: it was idle")
				assert.Equal(t, 0, e.m.Fleets()[0].Nodes)
			})
		})
	}
}

// TestIdleNodeDestroyedOutOfBandIsNotReplaced with replicas sharing a
// store: the holder of the fleet sees the node vanish and lowers the
// fleet's Nodes in the store, so neither it nor the replica that takes the
// fleet over later buys a replacement. Hot Aisle VM (fixed hold), a job
// handed out by the holder to 35:00 (its MarkIdle recorded through the
// other replica), destroyed at 40:00.
func TestIdleNodeDestroyedOutOfBandOnReplicasIsNotReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := oneNodeOnReplicas(t, "a", hotType("vm-mi300x-1"), fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute}, 5*time.Minute)
		e, rs, from := o.e, o.rs, o.from
		other := rs.ms[1-o.h]
		x, err := rs.ms[o.h].Acquire(t.Context(), "a")
		require.NoError(t, err)
		time.Sleep(time.Until(from.Add(35 * time.Minute)))
		require.NoError(t, other.MarkIdle(x.ID))
		time.Sleep(time.Until(from.Add(40 * time.Minute)))
		require.True(t, serverCharge(e, x.ID).Live, "released before the destroy")
		require.NoError(t, e.hot.DestroyOutOfBand(x.ID))
		time.Sleep(3 * time.Hour)
		fs, err := other.ListFleets(t.Context())
		require.NoError(t, err)
		rs.stopAll()
		apDump(t, e, from)
		for _, f := range fs {
			t.Logf("fleet %s wants %d nodes", f.Name, f.Nodes)
		}
		assert.Len(t, servers(e.hot.Ledger().Charges), 1, "a replacement bought for an idle node destroyed out of band")
		require.Len(t, e.eventsOf(fleet.EventInstanceVanished), 1)
		assert.Contains(t, e.eventsOf(fleet.EventInstanceVanished)[0].Message, "not replaced")
	})
}

// The re-buy hold keeps a node coming back from a stop out of band only
// after the spares Acquire can hand out now. Two Hot Aisle VMs, one spare
// held 30 min (RebuySpares 1), IdleTimeout 5 min: B, then A created minutes
// later (A's minimum ends later: first in Acquire's order). Both jobs end
// at 20:00 after B's billing start, inside the minimums; A is halted out
// of band at 25:00 and boots again slowly (its agent unreachable until
// 90:00). At B's minimum's end the spare kept is B, which a job at 35:00
// gets at once; A, not held, goes at its own minimum's end while it boots
// again. Ranked by paid time alone, A would be kept and B released: the
// job would find no node.
func TestHeldSpareReadyNowBeforeOneBootingAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 30 * time.Minute, OnStopped: fleet.OnStoppedRestart, AgentTimeout: time.Hour})
		agent := &powerAgent{down: map[string]bool{}}
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: testOwner, Agent: agent})
		e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		defer stop()
		b, err := e.m.Acquire(t.Context(), "a")
		require.NoError(t, err)
		time.Sleep(3 * time.Minute)
		s := spec("a", 2, hotType("vm-mi300x-1"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		a := acquireWithin(t, e, "a", 20*time.Minute)
		from := serverCharge(e, b.ID).From
		require.True(t, serverCharge(e, a.ID).From.After(from.Add(time.Minute)), "A created after B")
		time.Sleep(time.Until(from.Add(20 * time.Minute)))
		require.NoError(t, e.m.MarkIdle(a.ID))
		require.NoError(t, e.m.MarkIdle(b.ID))
		time.Sleep(time.Until(from.Add(25 * time.Minute)))
		agent.set(a.ID, true)
		require.NoError(t, e.hot.HaltOutOfBand(a.ID))
		time.Sleep(time.Until(from.Add(35 * time.Minute)))
		got, err := e.m.Acquire(t.Context(), "a")
		ca, cb := serverCharge(e, a.ID), serverCharge(e, b.ID)
		t.Logf("at 35:00: A live %v (billed %v, from +%v), B live %v; Acquire %q %v", ca.Live, ca.Billed, ca.From.Sub(from), cb.Live, got.ID, err)
		require.NoError(t, err, "the spare that could serve the next job was not kept")
		assert.Equal(t, b.ID, got.ID)
		assert.False(t, ca.Live, "A, not held, is released while it boots again")
		assert.Equal(t, 30*time.Minute, ca.Billed, "A goes at its minimum's end")
		assert.Len(t, servers(e.hot.Ledger().Charges), 2, "no other server bought")
		require.NoError(t, e.m.MarkIdle(got.ID))
	})
}
