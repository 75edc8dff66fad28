package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Policy.RebuySpares' doc says the spares kept are "the first in Acquire's
// order", and Acquire's order is most paid time left, then the cheaper to
// keep, then the oldest (handOutOrder): among nodes past their minimum the
// hold keeps the cheaper, not the older.
//
// Input: fleet "a" of one Hot Aisle vm-mi300x-8 ($23.92/h, 60 min minimum,
// A), its spec then changed to vm-mi300x-1 ($2.99/h) with Nodes 2 (B, a
// newer node); a job on each; both given back at once, past their
// minimums; RebuySpares 1, RebuyHold 1 h, IdleTimeout 5 min. No job comes.
// Acquire would hand out B (cheaper to keep): B is the spare to keep, A
// goes after its IdleTimeout. (tester BG: before the fix, A was kept an
// hour, $23.92, and B released after 5 minutes; keeping B costs $2.99.)
func TestHoldKeepsTheSpareAcquireHandsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: time.Hour})
		e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-8"))
		stop := e.running()
		defer stop()
		a, err := e.m.Acquire(t.Context(), "a")
		require.NoError(t, err)
		s := spec("a", 2, hotType("vm-mi300x-1"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		b := acquireWithin(t, e, "a", time.Hour)
		require.NotEqual(t, a.ID, b.ID)
		require.Equal(t, "vm-mi300x-1", b.Offer.InstanceType)
		from := serverCharge(e, a.ID).From
		time.Sleep(time.Until(from.Add(80 * time.Minute))) // both past their minimums
		require.NoError(t, e.m.GiveBack(a))
		require.NoError(t, e.m.GiveBack(b))
		ended := time.Now()
		time.Sleep(20 * time.Minute)
		// What Acquire would hand out now, without taking it.
		var idle []string
		for _, in := range e.m.Instances("a") {
			if in.Status == fleet.StatusIdle {
				idle = append(idle, in.ID+" "+in.Offer.InstanceType)
			}
		}
		t.Logf("idle 20 min after the jobs ended: %v", idle)
		ca := waitChargeEnds(e, a.ID, 4*time.Hour)
		cb := waitChargeEnds(e, b.ID, 4*time.Hour)
		idleA, idleB := ca.To.Sub(ended).Round(time.Minute), cb.To.Sub(ended).Round(time.Minute)
		t.Logf("A (vm-mi300x-8) idle %v billed $%.2f; B (vm-mi300x-1) idle %v billed $%.2f", idleA, ca.USD, idleB, cb.USD)
		assert.LessOrEqual(t, idleA, 7*time.Minute,
			"the $23.92/h node kept as the spare for %v (B, $2.99/h, released after %v): $%.2f spent where keeping B would cost $%.2f",
			idleA, idleB, idleA.Hours()*23.92, idleA.Hours()*2.99)
		assert.GreaterOrEqual(t, idleB, 55*time.Minute, "B, the spare Acquire hands out, not held its RebuyHold")
	})
}

// The same with the default hold: vm-mi300x-8 ($23.92/h) and
// vm-mi300x-2 ($5.98/h) share a minimum (60 min) and a boot, so one hold.
// Fleet "a": A (vm-mi300x-8) runs a job to 70:00; its spec changed to
// vm-mi300x-2 with Nodes 2 at 05:00 buys B, which gets no job. At 70:00
// both are idle past their minimums; one job ran at a time, so the hold
// keeps one spare. Acquire would hand out B (cheaper to keep); the hold
// must keep B. (tester BG: before the fix, it kept A, the older, 30
// minutes past 70:00, $11.96, and released B at once; holding B costs
// $2.99.)
func TestDefaultHoldKeepsTheCheaperSpare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-8"))
		stop := e.running()
		defer stop()
		a, err := e.m.Acquire(t.Context(), "a")
		require.NoError(t, err)
		from := serverCharge(e, a.ID).From
		time.Sleep(5 * time.Minute)
		s := spec("a", 2, hotType("vm-mi300x-2"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		time.Sleep(time.Until(from.Add(70 * time.Minute)))
		var b fleet.Instance
		for _, in := range e.m.Instances("a") {
			if in.ID != a.ID && in.Status == fleet.StatusIdle {
				b = in
			}
		}
		require.Equal(t, "vm-mi300x-2", b.Offer.InstanceType, "B not idle at 70:00")
		require.NoError(t, e.m.GiveBack(a))
		ended := time.Now()
		ca := waitChargeEnds(e, a.ID, 4*time.Hour)
		cb := waitChargeEnds(e, b.ID, 4*time.Hour)
		idleA, idleB := ca.To.Sub(ended).Round(time.Minute), cb.To.Sub(ended).Round(time.Minute)
		t.Logf("A (vm-mi300x-8) kept %v after 70:00, billed $%.2f; B (vm-mi300x-2) kept %v, billed $%.2f", idleA, ca.USD, idleB, cb.USD)
		assert.LessOrEqual(t, idleA, 7*time.Minute,
			"the $23.92/h node held as the spare for %v while B ($5.98/h) went after %v: $%.2f where holding B would cost $%.2f",
			idleA, idleB, idleA.Hours()*23.92, idleA.Hours()*5.98)
		assert.GreaterOrEqual(t, idleB, 20*time.Minute, "B, the spare Acquire hands out, not held")
	})
}
