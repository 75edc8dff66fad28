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

// A fleet whose create is held back by its kind's instance-limit hold (a
// create of another fleet was refused for the account's instance limit:
// holdKind, 10 min to 1 h) is refused that stock as much as the fleet whose
// create was answered: held spares give way to it too. Hot Aisle VMs, team
// limit 1: fleet "a" runs a job on the team's one VM (vm-mi300x-1, 30-min
// minimum; IdleTimeout 2 min; a fixed re-buy hold of one spare for 10 h)
// to 38:30. At 40:00 fleet "b" applies one VM and is refused for the limit
// (401 "Maximum VMs already provisioned for this team"): VM creates are
// held (about 10 min). b's work goes elsewhere (b is deleted at 40:15);
// a's VM, past its minimum, is held idle from 40:30. At 41:00 fleet "d"
// applies one VM: its create is held back, not tried. a's held VM should
// give way to d, which is served after the VM's delete and one boot, not
// after the hold's end.
//
// (before the fix: d was never recorded as refused while held back; it
// waited for the hold's end, was refused then, and only then did a's VM
// give way: d served after 12m30s to 12m50s (2 runs; its backoff is
// jittered), a's idle VM billed 54 min instead of 42; now 30s.)
func TestHoldYieldsToAFleetHeldBackByTheLimitHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, x, from, asked := heldBackByLimitHold(t, false)
		wait := untilServed(t, e, "d", asked, 3*time.Hour)
		logYieldEvents(t, e, from)
		for _, ev := range e.eventsOf(fleet.EventNoOffers) {
			t.Logf("+%v no offers %s: %s", ev.Time.Sub(from).Round(time.Second), ev.Fleet, ev.Message)
		}
		yielded := yieldedTo(e, "d", asked)
		t.Logf("d served after %v; yielded to d: %v; a's VM billed %v", wait.Round(time.Second), yielded, serverCharge(e, x.ID).Billed)
		assert.Len(t, yielded, 1, "a's held VM gives way to d, held back by the VM limit's hold")
		assert.LessOrEqual(t, wait, 2*time.Minute, "d waited %v for the VM limit's hold to end instead of a's held VM giving way", wait)
	})
}

// As above, but Hot Aisle's creates are also held for the account's
// balance (fleet "m", one bare-metal server, refused 402 at 40:30): no
// create of d can use a place freed before that hold ends, and a's held VM
// stays.
//
// (a guard: it passed before the fix too.)
func TestNoYieldForAFleetHeldBackByTheAccountToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, x, from, asked := heldBackByLimitHold(t, true)
		time.Sleep(5 * time.Minute)
		logYieldEvents(t, e, from)
		assert.Empty(t, yieldedTo(e, "d", asked), "a's held VM gave way to d while the account's hold (402) keeps d's creates")
		assert.True(t, serverCharge(e, x.ID).Live, "a's held VM released")
	})
}

// heldBackByLimitHold sets up the case above to 41:00, when d applies (and
// with balance, fleet m's bare-metal create refused 402 at 40:30 first),
// and returns the env, a's VM, its billing start and when d applied.
func heldBackByLimitHold(t *testing.T, balance bool) (*env, fleet.Instance, time.Time, time.Time) {
	t.Helper()
	e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: 10 * time.Hour}, sim.WithHotAisleLimits(1, 5))
	e.idleFleet("a", 1, 2*time.Minute, hotType("vm-mi300x-1"))
	stop := e.running()
	t.Cleanup(stop)
	x, err := e.m.Acquire(t.Context(), "a")
	require.NoError(t, err)
	from := serverCharge(e, x.ID).From
	time.Sleep(time.Until(from.Add(38*time.Minute + 30*time.Second)))
	require.NoError(t, e.m.MarkIdle(x.ID))
	time.Sleep(time.Until(from.Add(40 * time.Minute)))
	b := spec("b", 1, hotType("vm-mi300x-1"))
	b.IdleTimeout = 5 * time.Minute
	require.NoError(t, e.m.Apply(t.Context(), b))
	for deadline := time.Now().Add(time.Minute); len(e.eventsOf(fleet.EventCreatesRefused)) == 0; time.Sleep(time.Second) {
		require.True(t, time.Now().Before(deadline), "b's create was not refused for the limit")
	}
	time.Sleep(time.Until(from.Add(40*time.Minute + 15*time.Second)))
	require.NoError(t, e.m.Delete(t.Context(), "b"))
	if balance {
		time.Sleep(time.Until(from.Add(40*time.Minute + 30*time.Second)))
		require.NoError(t, e.hot.Inject(sim.Fault{Route: hMetal, Status: http.StatusPaymentRequired,
			Message: "Insufficient balance to provision bare metal server"}))
		ms := spec("m", 1, hotType("bm-mi300x-8"))
		ms.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), ms))
		for deadline := time.Now().Add(30 * time.Second); calls(e.hot.Calls(), hMetal, http.StatusPaymentRequired) == 0; time.Sleep(time.Second) {
			require.True(t, time.Now().Before(deadline), "m's create was not refused for the balance")
		}
	}
	time.Sleep(time.Until(from.Add(41 * time.Minute)))
	require.True(t, serverCharge(e, x.ID).Live, "a's VM held (idle since 38:30, IdleTimeout 2 min)")
	d := spec("d", 1, hotType("vm-mi300x-1"))
	d.IdleTimeout = 5 * time.Minute
	require.NoError(t, e.m.Apply(t.Context(), d))
	return e, x, from, time.Now()
}
