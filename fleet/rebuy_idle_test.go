package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An idle Vultr node whose release did not land before its hour's end has
// bought the next hour: it is paid to that hour's end and nothing is saved
// by deleting it inside it. Vultr Cloud GPU, IdleTimeout 1 min, job 0–20
// min, every DELETE answering 500 until 1:00:30; a second job at 1:10 (the
// orchestrator Acquires, and on ErrNoIdle grows the fleet with Apply).
// Expected: once the boundary passed with the release refused, it is put
// off to the new hour's last safe moment (said with EventReleaseDeferred)
// and the Apply takes the node back: one VM, 2 h billed, no wait (tester
// AN: the VM deleted at 1:02:51 with its second hour paid, a second VM
// bought, 3 h billed, the job waited 1m50s for a boot, before).
func TestVultrMissedBoundaryStrandsThePaidHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLiveWorld(t, fleet.Policy{})
		defer w.finish()
		t0 := time.Now()
		at := func(d time.Duration) { time.Sleep(time.Until(t0.Add(d))) }
		require.NoError(t, w.v.Inject(sim.Fault{Route: vultrDeleteRoute, Status: 500, Duration: time.Hour + 30*time.Second}))
		s := fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute, Requirements: vultrType("vcg-a100-12c-120g-80vram")}
		require.NoError(t, w.m.Apply(context.Background(), s))
		first, ok := w.acquire("f", time.Hour)
		require.True(t, ok)
		at(20 * time.Minute)
		require.NoError(t, w.m.MarkIdle(first.ID))
		at(70 * time.Minute)
		for _, in := range w.m.Instances("f") {
			if in.ID == first.ID {
				assert.Equal(t, fleet.StatusTerminating, in.Status, "the release waits for the paid hour's last safe moment")
			}
		}
		// The orchestrator's second job: take an idle node, else grow the fleet to demand.
		if _, err := w.m.Acquire(context.Background(), "f"); err != nil {
			require.NoError(t, w.m.Apply(context.Background(), s))
		}
		asked := time.Now()
		second, ok := w.acquire("f", time.Hour)
		require.True(t, ok)
		waited := time.Since(asked)
		at(80 * time.Minute)
		require.NoError(t, w.m.MarkIdle(second.ID))
		w.settle(6 * time.Hour)
		var billed time.Duration
		cs := w.ledger()
		for _, c := range cs {
			assert.False(t, c.Live, "still billing: %s", c.ResourceID)
			billed += c.Billed
		}
		assert.Len(t, cs, 1, "a second VM bought while the first one's second hour was paid (first released %v after the billing start)",
			cs[0].To.Sub(cs[0].From).Round(time.Second))
		assert.Equal(t, 2*time.Hour, billed, "hours billed in all")
		assert.Equal(t, first.ID, second.ID, "the second job ran on a new VM")
		assert.Less(t, waited, time.Minute, "the second job waited %v for a boot", waited.Round(time.Second))
	})
}

// hotBareMetalDeleteRoute is the Hot Aisle bare-metal release.
const hotBareMetalDeleteRoute = "DELETE /api/teams/{team}/bare_metal/{server}/"

// A Hot Aisle bare-metal server adopted after a restart that lost the
// Store (no start known) is released idle without force; Hot Aisle refuses
// for the 8-hour minimum, so it is kept (paid anyway) and the delete tried
// again every minute, and a fleet that grows takes it back — also while one
// of those retries is under way (10 s each here): the growth waits for the
// answer instead of reserving another server. Job 0–25 min, restart with
// an empty Store at 30 min, IdleTimeout 10 min; at ~50 min, 5 s into a
// refused retry, Acquire answers ErrNoIdle and the orchestrator grows the
// fleet with Apply. Expected: the adopted server taken back, one machine,
// no wait (tester AN: a second server reserved, $216.96 for 8 more prepaid
// hours, and the job waited 10m10s for its install, before).
func TestAdoptedBareMetalRefusedRetryInFlightBuysAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLiveWorld(t, fleet.Policy{})
		defer w.finish()
		t0 := time.Now()
		at := func(d time.Duration) { time.Sleep(time.Until(t0.Add(d))) }
		require.NoError(t, w.h.Inject(sim.Fault{Route: hotBareMetalDeleteRoute, Latency: 10 * time.Second}))
		s := fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: 10 * time.Minute, Requirements: hotType("bm-mi300x-8")}
		require.NoError(t, w.m.Apply(context.Background(), s))
		first, ok := w.acquire("f", 2*time.Hour)
		require.True(t, ok)
		at(25 * time.Minute)
		require.NoError(t, w.m.MarkIdle(first.ID))
		at(30 * time.Minute)
		w.stop()
		w.store = fleet.NewMemoryStore() // the Store is lost
		w.start()
		require.NoError(t, w.m.Apply(context.Background(), s))
		// Wait for a refused retry to end after 49:00, then for the next to be under way.
		deletes := func() int { return calls(w.h.Calls(), hotBareMetalDeleteRoute, 400) }
		at(49 * time.Minute)
		for n := deletes(); deletes() == n; {
			time.Sleep(time.Second)
		}
		time.Sleep(time.Minute + 5*time.Second) // the next retry: a minute after the answer, 10 s long
		_, err := w.m.Acquire(context.Background(), "f")
		require.ErrorIs(t, err, fleet.ErrNoIdle, "the adopted server is being released")
		require.NoError(t, w.m.Apply(context.Background(), s)) // grow to demand
		asked := time.Now()
		second, ok := w.acquire("f", 2*time.Hour)
		require.True(t, ok)
		waited := time.Since(asked)
		require.NoError(t, w.m.MarkIdle(second.ID))
		cs := w.ledger()
		assert.Len(t, cs, 1, "a second bare-metal server reserved (8 prepaid hours) while the adopted one, paid to 8:00, waited terminating")
		assert.Equal(t, first.ID, second.ID, "the job did not get the adopted server")
		assert.Less(t, waited, time.Minute, "the job waited %v for a new server", waited.Round(time.Second))
	})
}

// The same adopted server, with deletes that answer at once: the Apply that
// grows the fleet is carried out in the pass in which the refused release's
// next retry falls due (a caller driving the Manager with Reconcile, at
// NextPass). The growth takes the server back before the retry starts: no
// delete call in that pass, no second server, the job gets it at once
// (tester AN: Apply at 50:00 with retries on the minute reserved a second
// server, $216.96, before: the retry started before the fleet's growth
// looked, and a release under way was not taken back).
func TestAdoptedBareMetalRetryDueInTheGrowingPassIsTakenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.adoptIdle("bm-mi300x-8", 10*time.Minute)
		s := spec("f", 1, hotType("bm-mi300x-8"))
		s.IdleTimeout = 10 * time.Minute
		refused := func() int { return calls(e.hot.Calls(), hotBareMetalDeleteRoute, 400) }
		deletes := func() int { return calls(e.hot.Calls(), hotBareMetalDeleteRoute, 0) }
		require.True(t, e.runUntil(time.Hour, func() bool { return refused() > 0 }), "the adopted server's release refused for the minimum")
		var due time.Time
		for _, r := range e.m.Records() {
			if r.Termination != nil && r.Instance.Status == fleet.StatusTerminating {
				due = r.Termination.NextAttempt
			}
		}
		require.False(t, due.IsZero(), "a retry planned")
		time.Sleep(time.Until(due))
		_, err := e.m.Acquire(t.Context(), "f")
		require.ErrorIs(t, err, fleet.ErrNoIdle, "the adopted server is being released")
		require.NoError(t, e.m.Apply(t.Context(), s)) // grow to demand, in the pass the retry is due
		before := deletes()
		require.NoError(t, e.m.Reconcile(t.Context()))
		assert.Equal(t, before, deletes(), "a retry started in the pass that grew the fleet")
		inst, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err, "the adopted server handed out")
		e.run(30 * time.Minute)
		cs := servers(e.hot.Ledger().Charges)
		assert.Len(t, cs, 1, "a second bare-metal server reserved while the adopted one waited terminating")
		assert.Equal(t, cs[0].ResourceID, inst.ID)
		assert.Positive(t, e.count(fleet.EventReleaseCancelled), "taken back")
	})
}

// Two idle Vultr VMs whose deletes the provider refuses (HTTP 500) from
// before their hour's end to 1:05: one delete at a time probes the outage
// and the other waits for its answer (postponeProbed). Once the hour's
// end is past, both releases wait for the paid hour's last safe moment
// (no attempt made, NotBefore 1:50: the hour's end less
// HourlyReleaseMargin, the provider being unsettled), so a fleet that grows
// back to two at 1:00:40 takes both back instead of buying two new VMs
// (tester AN's kind, before: the refused release went on with its backoff,
// and only a release with no attempt made was taken back).
func TestVultrRefusedAcrossTheHourBothReleasesWaitToBeTakenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLiveWorld(t, fleet.Policy{})
		defer w.finish()
		t0 := time.Now()
		at := func(d time.Duration) { time.Sleep(time.Until(t0.Add(d))) }
		require.NoError(t, w.v.Inject(sim.Fault{Route: vultrDeleteRoute, Status: 500, Duration: time.Hour + 5*time.Minute}))
		s := fleet.Spec{Name: "f", Nodes: 2, IdleTimeout: time.Minute, Requirements: vultrType("vcg-a100-12c-120g-80vram")}
		require.NoError(t, w.m.Apply(context.Background(), s))
		a, ok := w.acquire("f", time.Hour)
		require.True(t, ok)
		b, ok := w.acquire("f", time.Hour)
		require.True(t, ok)
		at(20 * time.Minute)
		require.NoError(t, w.m.MarkIdle(a.ID))
		require.NoError(t, w.m.MarkIdle(b.ID))
		at(time.Hour + 40*time.Second)
		for _, r := range w.m.Records() {
			if r.Instance.Status != fleet.StatusTerminating {
				continue
			}
			tm := r.Termination
			assert.Zero(t, tm.Attempts, "%s: %d refused attempts, not put off to the paid hour", r.Instance.ID, tm.Attempts)
			assert.Equal(t, r.Instance.Created.Add(2*time.Hour-10*time.Minute), tm.NotBefore, "%s: put off to the paid hour's last safe moment", r.Instance.ID)
		}
		require.NoError(t, w.m.Apply(context.Background(), s)) // two jobs: grow back to demand
		_, ok = w.acquire("f", time.Hour)
		require.True(t, ok)
		_, ok = w.acquire("f", time.Hour)
		require.True(t, ok)
		assert.Len(t, w.ledger(), 2, "new VMs bought while two paid hours were kept")
	})
}

// reconcileEvery drives e's Manager with Reconcile every step until d
// after the start t0.
func (e *env) reconcileEvery(step time.Duration, t0 time.Time, d time.Duration) {
	e.t.Helper()
	for ; time.Now().Before(t0.Add(d)); time.Sleep(step) {
		require.NoError(e.t, e.m.Reconcile(e.t.Context()))
	}
}

// A Vultr idle release refused (HTTP 500 to 1:05) whose last attempt before
// the hour's end is refused is put off then, before the boundary, to the
// paid hour's last safe moment, and stays put off: passes made every second
// up to the boundary do not bring it back to the hour that ends (whose
// window is over) and try it again. One deferral, no delete between it and
// 1:50 (tester AN's kind: the refused release went on into the paid hour,
// before).
func TestVultrReleasePutOffBeforeTheBoundaryStaysPutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		t0 := time.Now()
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: vultrDeleteRoute, Status: 500, Duration: time.Hour + 5*time.Minute}))
		e.idleFleet("f", 1, time.Minute, vultrType("vcg-a100-12c-120g-80vram"))
		created := e.only("f").Created
		deletes := func() int { return calls(e.vultr.Calls(), vultrDeleteRoute, 0) }
		e.reconcileEvery(10*time.Second, t0, created.Sub(t0)+58*time.Minute)
		require.Positive(t, deletes(), "the idle release tried and refused")
		var n int
		for time.Now().Before(created.Add(time.Hour + time.Minute)) {
			require.NoError(t, e.m.Reconcile(t.Context()))
			if n == 0 && e.count(fleet.EventReleaseDeferred) > 0 {
				n = deletes()
			}
			time.Sleep(time.Second)
		}
		evs := e.eventsOf(fleet.EventReleaseDeferred)
		require.Len(t, evs, 1, "put off once")
		assert.True(t, evs[0].Time.Before(created.Add(time.Hour)), "put off at %v, when its last attempt before the hour's end was refused",
			evs[0].Time.Sub(created).Round(time.Second))
		assert.Equal(t, created.Add(2*time.Hour-10*time.Minute), evs[0].At)
		assert.Equal(t, n, deletes(), "deletes tried after the release was put off")
		assert.Equal(t, 1, e.count(fleet.EventTerminationStuck), "the alert: an hour bought because deletes were refused")
	})
}

// A scale-down of a Vultr VM under the default policy waits for its hour's
// last safe moment (57:00). A caller that drives the Manager with Reconcile
// and makes no pass between 45:00 and 1:02 finds the release due only in
// the next hour, which is paid by then: it is put off to that hour's last
// safe moment instead of deleting the VM 2 minutes into it, and the fleet
// growing again at 1:03 takes the VM back (tester AN's kind, before: a
// release due past the boundary was carried out at once, and the growth
// bought a new VM).
func TestVultrScaleDownReleaseDueOnlyAfterTheHourKeepsThePaidHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		t0 := time.Now()
		e.idleFleet("f", 1, 0, vultrType("vcg-a100-12c-120g-80vram"))
		node := e.only("f")
		e.reconcileEvery(10*time.Second, t0, node.Created.Sub(t0)+30*time.Minute)
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 0, vultrType("vcg-a100-12c-120g-80vram"))))
		e.reconcileEvery(10*time.Second, t0, node.Created.Sub(t0)+45*time.Minute)
		time.Sleep(time.Until(node.Created.Add(time.Hour + 2*time.Minute))) // no pass meanwhile
		require.NoError(t, e.m.Reconcile(t.Context()))
		assert.Zero(t, calls(e.vultr.Calls(), vultrDeleteRoute, 0), "deleted inside the hour it paid")
		evs := e.eventsOf(fleet.EventReleaseDeferred)
		require.NotEmpty(t, evs)
		assert.Equal(t, node.Created.Add(2*time.Hour-3*time.Minute), evs[len(evs)-1].At, "put off to the paid hour's last safe moment")
		time.Sleep(time.Minute)
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, vultrType("vcg-a100-12c-120g-80vram"))))
		require.NoError(t, e.m.Reconcile(t.Context()))
		got, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err, "the VM taken back")
		assert.Equal(t, node.ID, got.ID)
		e.run(3 * time.Hour)
		cs := servers(e.vultr.Ledger().Charges)
		assert.Len(t, cs, 1, "a new VM bought")
		assert.Zero(t, e.count(fleet.EventTerminationStuck), "nothing was refused")
	})
}
