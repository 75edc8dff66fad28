package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
)

// vultrBM is the Vultr bare-metal type of the restart margin tests.
const vultrBM = "vbm-256c-2048gb-8-mi300x-gpu"

// Vultr bare metal, idle in its second hour since its job ended at 70:00.
// Without a restart it stays acquirable to 117:00 (the calm 3-min margin).
// A Manager restarted from its Store at 100:00, the provider answering
// every call, must keep it so too: a job at 112:00 (to 115:00) gets the
// idle node, one server, 2 hours, 35.04 USD, no wait, as without the
// restart. The Store records that the provider was calm (no failed call
// within 30 minutes), so the restart does not widen the margin.
//
// (tester BD: before the fix, the restarted Manager released the node at
// 110:00 (the wide 10-min margin for its first 30 minutes), Acquire at
// 112:00 answered ErrNoIdle, the job waited 41 min for a new server: 2
// servers, $52.56.)
func TestRestartKeepsTheCalmHourlyMargin(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				e.idleFleet("a", 1, 5*time.Minute, vultrType(vultrBM))
				stop := e.running()
				x, from := jobThenIdle(t, e, "a", 70*time.Minute, 100*time.Minute)
				if restart {
					stop()
					e.restartWith(e.store)
					stop = e.running()
				}
				defer func() { stop() }()
				time.Sleep(time.Until(from.Add(112 * time.Minute)))
				y, err := e.m.Acquire(t.Context(), "a")
				for _, ev := range e.eventsOf(fleet.EventReleaseRequested) {
					t.Logf("+%v release requested %s %s", ev.Time.Sub(from).Round(time.Second), ev.InstanceID, ev.Message)
				}
				t.Logf("restart %v: Acquire at +112m: %q %v", restart, y.ID, err)
				asked := time.Now()
				if err != nil { // grow to demand, as an orchestrator does
					s := spec("a", 1, vultrType(vultrBM))
					s.IdleTimeout = 5 * time.Minute
					require.NoError(t, e.m.Apply(t.Context(), s))
					y = acquireWithin(t, e, "a", 3*time.Hour)
				}
				wait := time.Since(asked)
				time.Sleep(time.Until(from.Add(115 * time.Minute)))
				require.NoError(t, e.m.GiveBack(y))
				time.Sleep(4 * time.Hour)
				var usd float64
				var billed time.Duration
				for _, ch := range servers(e.vultr.Ledger().Charges) {
					usd += ch.USD
					billed += ch.Billed
				}
				t.Logf("restart %v: job 112m-115m waited %v; servers %d, billed %v, %.2f USD", restart, wait, len(servers(e.vultr.Ledger().Charges)), billed, usd)
				assert.Equal(t, x.ID, y.ID, "the job at +112m did not get the idle node (waited %v)", wait)
				assert.Len(t, servers(e.vultr.Ledger().Charges), 1, "bought again")
				assert.Equal(t, 2*time.Hour, billed, "billed")
			})
		})
	}
}

// settleFailures lists, as offsets from from, the Vultr bare-metal
// listings answered by an injected fault.
func settleFailures(e *env, from time.Time) []time.Duration {
	var out []time.Duration
	for _, c := range e.vultr.Calls() {
		if c.Route == "GET /v2/bare-metals" && c.Fault {
			out = append(out, c.Time.Sub(from).Round(time.Second))
		}
	}
	return out
}

// releaseRequested is when (from from) the first release of id was
// requested, -1 when none was.
func releaseRequested(e *env, id string, from time.Time) time.Duration {
	for _, ev := range e.eventsOf(fleet.EventReleaseRequested) {
		if ev.InstanceID == id {
			return ev.Time.Sub(from).Round(time.Second)
		}
	}
	return -1
}

// withinMinute asserts that got is want, give or take a minute.
func withinMinute(t *testing.T, want, got time.Duration, msg string) {
	t.Helper()
	assert.True(t, got >= want-time.Minute && got <= want+time.Minute, "%s: got +%v, want +%v", msg, got, want)
}

// Vultr bare metal idle since its job ended at 70:00, its listings failing
// (HTTP 503) for a while before the Manager is restarted from its Store at
// 100:00, the provider answering every call after. What failed before the
// restart counts as if the Manager had run on: listings failing from 85:00
// to 97:00 keep the wide margin (10 min) to the release at 110:00; failures
// from 72:00 to 75:00 have passed by then (30 minutes), and the node stays
// acquirable to the calm margin (3 min), 117:00, as without a restart.
//
// (tester BD: before the fix, the restarted Manager took the wide margin
// for its first 30 minutes whatever had failed: 110:00 in both cases.)
func TestRestartHonoursTheRecordedProviderFailure(t *testing.T) {
	for _, c := range []struct {
		name          string
		down, downFor time.Duration // the listings fail from down after the billing start, for downFor
		want          time.Duration // the release, after the billing start
	}{
		{"failed to 3m before", 85 * time.Minute, 12 * time.Minute, 110 * time.Minute},
		{"failed to 25m before", 72 * time.Minute, 3 * time.Minute, 117 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				e.idleFleet("a", 1, 5*time.Minute, vultrType(vultrBM))
				stop := e.running()
				x, from := jobThenIdle(t, e, "a", 70*time.Minute, c.down)
				require.NoError(t, e.vultr.Inject(sim.Fault{Route: "GET /v2/bare-metals", Status: 503, Duration: c.downFor}))
				time.Sleep(time.Until(from.Add(100 * time.Minute)))
				stop()
				failed := settleFailures(e, from)
				e.restartWith(e.store)
				stop = e.running()
				defer stop()
				waitChargeEnds(e, x.ID, 2*time.Hour)
				got := releaseRequested(e, x.ID, from)
				t.Logf("%s: listings failed at %v; restart at +100m; release requested at +%v", c.name, failed, got)
				require.NotEmpty(t, failed, "no listing failed before the restart")
				withinMinute(t, c.want, got, "the release")
			})
		})
	}
}

// noTroubleRecord is a Store without the providers' trouble record
// (MetaUnsettled): with err nil, one written by a release that does not
// record it (it neither keeps nor shows it); else one whose reads and
// writes of it fail with err.
type noTroubleRecord struct {
	*fleet.MemoryStore
	err error
}

func (s noTroubleRecord) Meta(ctx context.Context, key string) (string, bool, error) {
	if key == fleet.MetaUnsettled {
		return "", false, s.err
	}
	return s.MemoryStore.Meta(ctx, key)
}

func (s noTroubleRecord) PutMeta(ctx context.Context, key, value string) error {
	if key == fleet.MetaUnsettled {
		return s.err
	}
	return s.MemoryStore.PutMeta(ctx, key, value)
}

// A Store written by an older release (no MetaUnsettled) does not say what
// failed before the restart: the restarted Manager keeps the wide margin
// for its first 30 minutes, as before (Vultr bare metal idle since 70:00,
// restart at 100:00: released at 110:00), and records from then on (the
// Store says it records since the restart).
func TestRestartOnAStoreWithoutTroubleRecordKeepsTheWideMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		ms := fleet.NewMemoryStore()
		e.restartWith(noTroubleRecord{MemoryStore: ms})
		e.idleFleet("a", 1, 5*time.Minute, vultrType(vultrBM))
		stop := e.running()
		x, from := jobThenIdle(t, e, "a", 70*time.Minute, 100*time.Minute)
		stop()
		_, ok, err := ms.Meta(t.Context(), fleet.MetaUnsettled)
		require.NoError(t, err)
		require.False(t, ok)
		e.restartWith(ms)
		restarted := time.Now()
		stop = e.running()
		defer stop()
		waitChargeEnds(e, x.ID, 2*time.Hour)
		got := releaseRequested(e, x.ID, from)
		t.Logf("restart at +100m on a store without the record: release requested at +%v", got)
		withinMinute(t, 110*time.Minute, got, "the release")
		v, ok, err := ms.Meta(t.Context(), fleet.MetaUnsettled)
		require.NoError(t, err)
		require.True(t, ok, "not recorded after the restart")
		var rec struct{ Since time.Time }
		require.NoError(t, json.Unmarshal([]byte(v), &rec), v)
		assert.True(t, restarted.Equal(rec.Since), "recorded since %v, restarted %v", rec.Since, restarted)
		assert.NotContains(t, v, sim.DefaultAPIKey)
	})
}

// Two replicas on a shared store, a Vultr bare-metal fleet of one node
// idle since its job ended at 70:00. The holder sees the provider's
// listings fail (HTTP 503) from 85:00 to 97:00 and dies at 100:00; the
// other replica, running since the start and with nothing of its own on
// the provider, takes the fleet over and must release the node at the wide
// margin (110:00), as the holder would have: the failure is in the store.
// Failures from 72:00 to 75:00 have passed by 110:00: released at the
// calm margin (117:00).
//
// (tester BD: before the fix, the taking replica did not know what the
// holder saw: the calm margin, 117:00, after the failures to 97:00.)
func TestReplicaTakeoverHonoursTheRecordedProviderFailure(t *testing.T) {
	for _, c := range []struct {
		name          string
		down, downFor time.Duration
		want          time.Duration
	}{
		{"failed to 3m before", 85 * time.Minute, 12 * time.Minute, 110 * time.Minute},
		{"failed to 25m before", 72 * time.Minute, 3 * time.Minute, 117 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				rs := apReplicas(t, e, fleet.Policy{}, 2)
				s := spec("v", 1, vultrType(vultrBM))
				s.IdleTimeout = 5 * time.Minute
				h := apConverge(t, rs, s)
				in, err := rs.ms[h].Acquire(t.Context(), "v")
				require.NoError(t, err)
				from := apCharge(t, e).From
				time.Sleep(time.Until(from.Add(70 * time.Minute)))
				require.NoError(t, rs.ms[h].GiveBack(in))
				time.Sleep(time.Until(from.Add(c.down)))
				require.NoError(t, e.vultr.Inject(sim.Fault{Route: "GET /v2/bare-metals", Status: 503, Duration: c.downFor}))
				time.Sleep(time.Until(from.Add(100 * time.Minute)))
				rs.stop(h)
				failed := settleFailures(e, from)
				time.Sleep(time.Until(from.Add(3 * time.Hour)))
				rs.stopAll()
				got := releaseRequested(e, in.ID, from)
				t.Logf("%s: listings failed at %v; holder r%d died at +100m; release requested at +%v", c.name, failed, h, got)
				require.NotEmpty(t, failed, "no listing failed before the takeover")
				withinMinute(t, c.want, got, "the release")
				assert.Equal(t, 2*time.Hour, apCharge(t, e).Billed)
			})
		})
	}
}

// hotFailures lists, as offsets from from, the Hot Aisle VM listings
// answered by an injected fault.
func hotFailures(e *env, from time.Time) []time.Duration {
	var out []time.Duration
	for _, c := range e.hot.Calls() {
		if c.Route == "GET /api/teams/{team}/virtual_machines/" && c.Fault {
			out = append(out, c.Time.Sub(from).Round(time.Second))
		}
	}
	return out
}

// A Hot Aisle VM (30-minute minimum), RebuyHoldOff, idle since its job
// ended at 8:00; the Manager is restarted from its Store at 18:00. Its VM
// listings failed (HTTP 503) from 9:00 to 17:00: the restarted Manager
// knows the provider is troubled and releases the node 10 minutes before
// the minimum ends (20:00, Policy.MinuteReleaseMargin widened to
// HourlyReleaseMargin), as the Manager before it would have. Nothing
// failed: 1 minute before (29:00).
//
// (tester BD: before the fix, the restart forgot the failures: 29:00 in
// both cases.)
func TestRestartHonoursTheRecordedFailureOnHotAisle(t *testing.T) {
	for _, c := range []struct {
		name string
		fail bool
		want time.Duration
	}{{"listings failed", true, 20 * time.Minute}, {"calm", false, 29 * time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{RebuyHoldOff: true})
				e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))
				stop := e.running()
				x, from := jobThenIdle(t, e, "a", 8*time.Minute, 9*time.Minute)
				if c.fail {
					require.NoError(t, e.hot.Inject(sim.Fault{Route: "GET /api/teams/{team}/virtual_machines/", Status: 503, Duration: 8 * time.Minute}))
				}
				time.Sleep(time.Until(from.Add(18 * time.Minute)))
				stop()
				failed := hotFailures(e, from)
				e.restartWith(e.store)
				stop = e.running()
				defer stop()
				got := waitChargeEnds(e, x.ID, 2*time.Hour)
				at := releaseRequested(e, x.ID, from)
				t.Logf("%s: listings failed at %v; restart at +18m; release requested at +%v, billed %v", c.name, failed, at, got.Billed)
				if c.fail {
					require.NotEmpty(t, failed, "no listing failed before the restart")
				}
				withinMinute(t, c.want, at, "the release")
				assert.Equal(t, 30*time.Minute, got.Billed)
			})
		})
	}
}

// A Store that cannot read or write the providers' trouble record
// (MetaUnsettled) fails no pass (no EventStoreWriteFailed, the records
// written), and a Manager restarted on it keeps the wide margin for its
// first 30 minutes: Vultr bare metal idle since 70:00, restart at 100:00,
// released at 110:00.
func TestRestartWithTroubleRecordUnreadableKeepsTheWideMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		ms := fleet.NewMemoryStore()
		e.restartWith(noTroubleRecord{MemoryStore: ms, err: errors.New("meta: connection reset")})
		e.idleFleet("a", 1, 5*time.Minute, vultrType(vultrBM))
		stop := e.running()
		x, from := jobThenIdle(t, e, "a", 70*time.Minute, 100*time.Minute)
		stop()
		e.restartWith(noTroubleRecord{MemoryStore: ms, err: errors.New("meta: connection reset")})
		stop = e.running()
		defer stop()
		waitChargeEnds(e, x.ID, 2*time.Hour)
		got := releaseRequested(e, x.ID, from)
		t.Logf("restart at +100m, the record unreadable: release requested at +%v", got)
		withinMinute(t, 110*time.Minute, got, "the release")
		assert.Empty(t, e.eventsOf(fleet.EventStoreWriteFailed), "a pass failed")
		recs, err := ms.Instances(t.Context())
		require.NoError(t, err)
		require.Len(t, recs, 1)
		assert.Equal(t, fleet.StatusTerminated, recs[0].Instance.Status, "records not written")
	})
}
