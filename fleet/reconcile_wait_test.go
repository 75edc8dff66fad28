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

// An orchestrator that drives the Manager with Reconcile and NextPass (the
// documented custom loop: "call it again by NextPass, and at once after
// recording an intent") on both clouds. A Vultr VM of fleet "a" ran a job
// to 1:10 into its billing and idles; its release is due at the second
// hour's last safe moment (2:00 less the calm 3-minute margin). At 1:56
// the orchestrator applies a Hot Aisle fleet "b" and makes a pass at once;
// Hot Aisle is slow to answer that create (4.5 minutes; CreateTimeout is
// 5). Reconcile waits for the create's answer, but makes a pass whenever
// something falls due meanwhile: the idle Vultr node is released at 1:57
// and billed 2 hours. README: "Releases, deadlines and agent starts never
// wait behind creates ...; a hanging provider delays nothing else."
//
// (tester AQ: the Vultr VM billed 3h0m0s before, released 2h56m59.5s after
// billing began — Reconcile awaited the create, creates included in its
// wait, for up to Policy.CreateTimeout; $2.40 lost for an A100 VM.)
func TestReconcileWaitsForASlowCreatePastAVultrHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		in := e.idleFleet("a", 1, 5*time.Minute, vultrType("vcg-a100-12c-120g-80vram"))[0]
		from := servers(e.vultr.Ledger().Charges)[0].From
		job, err := e.m.Acquire(t.Context(), "a")
		require.NoError(t, err)
		require.Equal(t, in.ID, job.ID)
		pass := func() time.Time {
			require.NoError(t, e.m.Reconcile(t.Context()))
			return e.m.NextPass()
		}
		// The custom loop: a pass by NextPass, and at once after an intent.
		until := func(at time.Time) {
			for next := pass(); next.Before(at); next = pass() {
				time.Sleep(time.Until(next))
			}
			time.Sleep(time.Until(at))
		}
		until(from.Add(70 * time.Minute))
		require.NoError(t, e.m.MarkIdle(job.ID))
		until(from.Add(116 * time.Minute))
		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotCreate, Latency: 270 * time.Second, Times: 1}))
		require.NoError(t, e.m.Apply(t.Context(), spec("b", 1, hotType("vm-mi300x-1"))))
		until(from.Add(4 * time.Hour))
		c := servers(e.vultr.Ledger().Charges)[0]
		assert.False(t, c.Live, "still billing")
		assert.Equal(t, 2*time.Hour, c.Billed, "the idle Vultr node's release waited behind a Hot Aisle create (%s, released %v after billing began)",
			c.Description, c.To.Sub(c.From))
	})
}

// The same wait inside one fleet, with no fault injected: two Hot Aisle VMs
// created in one pass (30-minute minimum, billed per started minute), each
// running a job to past its minimum, IdleTimeout 5 minutes, no re-buy hold.
// Job B ends at 39:55, job A at 40:00 (from their billing start), each
// given back with MarkIdle and a pass at once; the loop then runs by
// NextPass. A goes at 44:50 (10 s before its 45th minute), B is due at
// 44:55. A Hot Aisle VM DELETE blocks about 20 s (Policy.Parallelism's
// doc); the pass that released A waits for it, and releases B at 44:55
// meanwhile: both are billed 45 minutes, as with Run.
//
// (tester AQ: B billed 46m0s before, deleted at 45m10s, A 45m0s — the pass
// awaited A's delete before stepping again; one minute per node whose idle
// release fell due while a pass waited for another call.)
func TestReconcileWaitsForADeletePastAMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuyHoldOff: true})
		e.idleFleet("h", 2, 5*time.Minute, hotType("vm-mi300x-1"))
		from := servers(e.hot.Ledger().Charges)[0].From
		a, err := e.m.Acquire(t.Context(), "h")
		require.NoError(t, err)
		b, err := e.m.Acquire(t.Context(), "h")
		require.NoError(t, err)
		pass := func() time.Time {
			require.NoError(t, e.m.Reconcile(t.Context()))
			return e.m.NextPass()
		}
		until := func(at time.Time) {
			for next := pass(); next.Before(at); next = pass() {
				time.Sleep(time.Until(next))
			}
			time.Sleep(time.Until(at))
		}
		until(from.Add(39*time.Minute + 55*time.Second))
		require.NoError(t, e.m.MarkIdle(b.ID))
		until(from.Add(40 * time.Minute))
		require.NoError(t, e.m.MarkIdle(a.ID))
		until(from.Add(2 * time.Hour))
		for _, c := range servers(e.hot.Ledger().Charges) {
			assert.False(t, c.Live, "still billing")
			t.Logf("%s: created %v after the first, billed %v, deleted at %v", c.ResourceID, c.From.Sub(from), c.Billed, c.To.Sub(c.From))
			assert.Equal(t, 45*time.Minute, c.Billed, "%s (a %s, b %s)", c.ResourceID, a.ID, b.ID)
		}
	})
}

// An intent recorded while a Reconcile waits for a slow create is carried
// out by that Reconcile at once: the caller's own "pass at once after an
// intent" would wait for the token until the create answers. Fleet "b"'s
// Hot Aisle create takes 4.5 minutes; 10 s into it, fleet "c" is applied on
// Vultr, and its create is made within seconds (before: when the Reconcile
// waiting for b's create returned, 4 m 20 s later).
func TestReconcileCarriesOutAnIntentWhileItWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.hot.Inject(sim.Fault{Route: hotCreate, Latency: 270 * time.Second, Times: 1}))
		require.NoError(t, e.m.Apply(t.Context(), spec("b", 1, hotType("vm-mi300x-1"))))
		done := make(chan error, 1)
		go func() { done <- e.m.Reconcile(t.Context()) }()
		time.Sleep(10 * time.Second)
		require.NotEmpty(t, e.hot.Calls(), "b's create under way")
		applied := time.Now()
		require.NoError(t, e.m.Apply(t.Context(), spec("c", 1, vultrType("vcg-a100-12c-120g-80vram"))))
		time.Sleep(time.Minute)
		cs := servers(e.vultr.Ledger().Charges)
		require.Len(t, cs, 1, "c's create not made while the pass waits for b's")
		assert.WithinDuration(t, applied, cs[0].From, 10*time.Second)
		require.NoError(t, <-done)
	})
}
