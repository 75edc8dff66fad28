package fleet_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldHotVMAt40 sets up a Hot Aisle VM (vm-mi300x-1, 30-min minimum) of fleet
// "a" held by a fixed re-buy hold (one spare, 10 h) after a job to 35:00,
// past its minimum; it returns at 40:00 with the node, the billing start
// and the running loop's stop.
func heldHotVMAt40(t *testing.T, simOpts ...sim.Option) (*env, fleet.Instance, time.Time, func()) {
	t.Helper()
	e, x, from, stop := oneNodeAfterJob(t, fleet.Policy{RebuySpares: 1, RebuyHold: 10 * time.Hour}, hotType("vm-mi300x-1"),
		5*time.Minute, 35*time.Minute, 40*time.Minute, simOpts...)
	require.True(t, serverCharge(e, x.ID).Live, "a's VM held past its minimum")
	return e, x, from, stop
}

// logYieldEvents logs the release events and the ledger.
func logYieldEvents(t *testing.T, e *env, from time.Time) {
	t.Helper()
	for _, ev := range e.eventsOf(fleet.EventReleaseRequested) {
		t.Logf("+%v release %s %s: %s", ev.Time.Sub(from).Round(time.Second), ev.Fleet, ev.InstanceID, ev.Message)
	}
	for _, ev := range e.eventsOf(fleet.EventOfferSkipped) {
		t.Logf("+%v skipped %s: %s (%s)", ev.Time.Sub(from).Round(time.Second), ev.Fleet, ev.Message, ev.Err)
	}
	for _, c := range servers(e.hot.Ledger().Charges) {
		t.Logf("%s %s from +%v billed %v $%.2f live %v (%s)", c.ResourceID, c.Plan, c.From.Sub(from).Round(time.Second), c.Billed, c.USD, c.Live, c.Description)
	}
}

// A fleet refused ONE offer as sold out while another offer it matches is
// listed available is not short of stock: its next create takes the other
// offer at once. The re-buy hold's yield ("idle nodes held ... give way
// to another fleet refused the stock", yieldHolds) should not release
// another fleet's held node for it. Fleet "a" holds a Hot Aisle VM
// (vm-mi300x-1) past its minimum (fixed hold of one spare for 10 h; job to
// 35:00). At 40:00 fleet "b", matching vm-mi300x-1 and vm-mi300x-2, is
// applied; its first create (vm-mi300x-1, the cheaper) is answered 404 "No
// available virtual machine" once. b is served at once by its next
// create; a's next job, 20 minutes later and well inside its 10-h hold,
// should find its held VM.
//
// (tester BA: before the fix, b's refusal of vm-mi300x-1 released a's held
// VM at 40:00; b was served 10 s later on vm-mi300x-2, and a's job at 60:00
// found no node: it waited 10 s for a new VM and its 30-min minimum, $1.50.)
func TestNoYieldForAFleetWithAnotherOfferAvailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, x, from, stop := heldHotVMAt40(t)
		defer stop()
		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotCreate, Times: 1, Status: http.StatusNotFound,
			Message: "No available virtual machine matching requested specifications"}))
		s := spec("b", 1, hotType("vm-mi300x-1", "vm-mi300x-2"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		asked := time.Now()
		y := acquireWithin(t, e, "b", time.Hour)
		t.Logf("b served after %v on %s (%s)", time.Since(asked).Round(time.Second), y.ID, y.Offer.InstanceType)
		time.Sleep(time.Until(from.Add(60 * time.Minute)))
		got, err := e.m.Acquire(t.Context(), "a")
		logYieldEvents(t, e, from)
		c := serverCharge(e, x.ID)
		t.Logf("a's held VM: live %v, billed %v; a's job at 60:00: %q %v", c.Live, c.Billed, got.ID, err)
		if err != nil { // the orchestrator grows a for its job
			sa := spec("a", 1, hotType("vm-mi300x-1"))
			sa.IdleTimeout = 5 * time.Minute
			require.NoError(t, e.m.Apply(t.Context(), sa))
			at := time.Now()
			z := acquireWithin(t, e, "a", time.Hour)
			t.Logf("a's job at 60:00 waited %v for a new VM %s: $%.2f (its 30-min minimum) bought", time.Since(at).Round(time.Second), z.ID, serverCharge(e, z.ID).USD)
		}
		assert.Empty(t, yieldedTo(e, "b", asked), "a's held VM released for b, which another offer served at once")
		assert.NoError(t, err, "a's next job inside its hold found no node: its held VM went to nobody")
	})
}

// A refusal for the account's balance (402) or a bad key (401) frees no
// stock: no held node yields.
//
// (tester BA: a guard; it passed before the fix too.)
func TestNoYieldForBalanceOrBadKey(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		msg    string
	}{
		{"402-balance", http.StatusPaymentRequired, "Insufficient balance to provision virtual machine"},
		{"401-bad-key", http.StatusUnauthorized, "Invalid token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, x, from, stop := heldHotVMAt40(t)
				defer stop()
				require.NoError(t, e.hot.Inject(sim.Fault{Route: hotCreate, Status: c.status, Message: c.msg}))
				s := spec("b", 1, hotType("vm-mi300x-1"))
				s.IdleTimeout = 5 * time.Minute
				require.NoError(t, e.m.Apply(t.Context(), s))
				asked := time.Now()
				time.Sleep(time.Until(from.Add(60 * time.Minute)))
				logYieldEvents(t, e, from)
				assert.Empty(t, yieldedTo(e, "b", asked))
				assert.True(t, serverCharge(e, x.ID).Live, "a's held VM released")
			})
		})
	}
}

// A release that waits for its minimum's end with no job on the node gives
// way to a refused fleet whatever made the Manager release it: a node
// stopped out of band with no job on it (OnStoppedReplace, the default:
// released, not replaced, its fleet shrinks by one) is released by the
// fleet's policy, which waits for the minimum's end (paid anyway), exactly
// like an idle or scale-down release — and a forced release of it now
// costs nothing more. Hot Aisle bare metal, the pool of 2: fleet "c" runs
// a job on one server all along; fleet "a"'s job on the other ends at
// 1:00 after its billing start, and that server is halted out of band at
// 1:30. At 2:00 fleet "b" applies one bare-metal node: sold out. Expected
// served after about one install (30 min), as for a waiting idle, scale-
// down or deleted-fleet release (TestWaitingReleaseGivesWayToARefusedFleet).
//
// (tester BA: before the fix, only idle, scale-down, deleted-fleet and
// caller releases gave way: b waited 6h13m, until a's stopped server's 8-h
// minimum ended; now 10m10s.)
func TestStoppedNodeWaitingReleaseGivesWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.idleFleet("a", 1, 5*time.Minute, hotType("bm-mi300x-8"))
		e.idleFleet("c", 1, 5*time.Minute, hotType("bm-mi300x-8"))
		stop := e.running()
		defer stop()
		xa, err := e.m.Acquire(t.Context(), "a")
		require.NoError(t, err)
		xc, err := e.m.Acquire(t.Context(), "c")
		require.NoError(t, err)
		from := serverCharge(e, xa.ID).From
		time.Sleep(time.Until(from.Add(time.Hour)))
		require.NoError(t, e.m.MarkIdle(xa.ID))
		time.Sleep(30 * time.Minute)
		require.NoError(t, e.hot.HaltOutOfBand(xa.ID))
		time.Sleep(time.Until(from.Add(2 * time.Hour)))
		require.NotEmpty(t, e.eventsOf(fleet.EventInstanceStopped), "the halt was seen")
		_, wait := applyUntilServed(t, e, "b", 12*time.Hour)
		for _, ev := range e.eventsOf(fleet.EventInstanceStopped) {
			t.Logf("+%v stopped %s: %s", ev.Time.Sub(from).Round(time.Second), ev.InstanceID, ev.Message)
		}
		logYieldEvents(t, e, from)
		ca := serverCharge(e, xa.ID)
		t.Logf("b waited %v; a's stopped server billed %v (to +%v)", wait.Round(time.Second), ca.Billed, ca.To.Sub(from).Round(time.Second))
		assert.True(t, serverCharge(e, xc.ID).Live, "c's busy server released")
		assert.LessOrEqual(t, wait, 40*time.Minute, "b waited %v for stock held by a's stopped server, whose release waited for its minimum's end with no job on it", wait)
	})
}

// A refusal counts for the need it was answered to, not for a later one: a
// fleet refused a create as sold out and then served is no longer short;
// when its orchestrator raises its Nodes minutes later, nothing says the
// offer is still sold out — its next create has not even been tried. Two
// fleets, "a" and "c", each hold a Hot Aisle VM (vm-mi300x-1) past its
// minimum (a fixed hold of one spare for 10 h; jobs to 35:00). At 40:00
// fleet "b" (vm-mi300x-1) is applied with 1 node; its first create is
// answered 404 "No available virtual machine" once (one held VM yields,
// as TestHoldYieldsOnlyOnceToAFleetStillWaiting expects). b is served. At
// 45:00 b is applied with 2 nodes: its create of vm-mi300x-1 (6 more in
// stock) is accepted at once. The other fleet's held VM should stay held:
// a job of that fleet at 60:00 should find it.
//
// (tester BA: before the fix, b's refusal counted 10 min for any shortfall:
// c's held VM was released at 45:00 for b's growth, whose create succeeded
// at once; yielded to b [a at 0s c at 5m0s], and both a's and c's jobs at
// 60:00 found no node.)
func TestNoYieldForAGrowthAfterAServedRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 10 * time.Hour})
		e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		e.idleFleet("c", 1, 5*time.Minute, hotType("vm-mi300x-1"))
		stop := e.running()
		defer stop()
		from := jobsUntil(t, e, 35*time.Minute, "a", "c")
		time.Sleep(time.Until(from.Add(40 * time.Minute)))
		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotCreate, Times: 1, Status: http.StatusNotFound,
			Message: "No available virtual machine matching requested specifications"}))
		s := spec("b", 1, hotType("vm-mi300x-1"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		asked := time.Now()
		y := acquireWithin(t, e, "b", time.Hour)
		t.Logf("b served after %v", time.Since(asked).Round(time.Second))
		first := yieldedTo(e, "b", asked)
		time.Sleep(time.Until(from.Add(45 * time.Minute)))
		s.Nodes = 2
		require.NoError(t, e.m.Apply(t.Context(), s))
		y2 := acquireWithin(t, e, "b", time.Hour)
		t.Logf("b's second node after %v", time.Since(from.Add(45*time.Minute)).Round(time.Second))
		require.NoError(t, e.m.MarkIdle(y.ID))
		require.NoError(t, e.m.MarkIdle(y2.ID))
		time.Sleep(time.Until(from.Add(60 * time.Minute)))
		logYieldEvents(t, e, from)
		all := yieldedTo(e, "b", asked)
		t.Logf("yielded to b for its refused first node: %v; in all: %v", first, all)
		lost := 0
		for _, f := range []string{"a", "c"} {
			x, err := e.m.Acquire(t.Context(), f)
			if err != nil {
				lost++
				t.Logf("fleet %s's job at 60:00: %v", f, err)
				continue
			}
			require.NoError(t, e.m.MarkIdle(x.ID))
		}
		assert.Len(t, all, len(first), "a held VM released for b's growth, whose create was never refused")
		assert.LessOrEqual(t, lost, 1, "jobs at 60:00 of fleets whose held VMs went to b")
	})
}
