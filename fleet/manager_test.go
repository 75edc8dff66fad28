package fleet

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) count(t EventType) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Type == t {
			n++
		}
	}
	return n
}

func (l *eventLog) first(t EventType) (Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Type == t {
			return e, true
		}
	}
	return Event{}, false
}

func vmOffer(provider string, price float64, minRes time.Duration) Offer {
	return Offer{Provider: provider, Region: "r1", InstanceType: "vm-1", PricePerHour: price, Available: true,
		Quantity: -1, MinimumReservation: minRes, BillingGranularity: time.Minute, SupportsVPC: true,
		GPU: GPU{Vendor: "AMD", Model: "MI300X", Count: 1, MemoryGiB: 192}}
}

func newTestManager(t *testing.T, cfg Config) (*Manager, *eventLog) {
	t.Helper()
	log := &eventLog{}
	cfg.OnEvent = log.add
	if cfg.Owner == "" {
		cfg.Owner = "t1" // one owner across restarts with an empty store
	}
	m, err := NewManager(cfg)
	require.NoError(t, err)
	t.Cleanup(m.Close)
	return m, log
}

// passes reconciles every 10 s for d of (bubble) time.
func passes(t *testing.T, m *Manager, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		require.NoError(t, m.Reconcile(t.Context()))
		time.Sleep(10 * time.Second)
	}
}

func statuses(insts []Instance) map[Status]int {
	out := map[Status]int{}
	for _, i := range insts {
		out[i.Status]++
	}
	return out
}

func TestManagerLifecycleWithoutAgentWaitsForReservationThenReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("hotaisle", vmOffer("hotaisle", 2.99, time.Hour))
		m, log := newTestManager(t, Config{Providers: []Provider{p}, Policy: Policy{RebuyHoldOff: true}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 2, MinNodes: 1, IdleTimeout: 5 * time.Minute}))
		passes(t, m, 5*time.Minute)
		insts := m.Instances("f")
		require.Len(t, insts, 2)
		assert.Equal(t, 2, statuses(insts)[StatusIdle])
		assert.Equal(t, 2, log.count(EventInstanceReady))
		for _, i := range insts {
			assert.Equal(t, i.Created.Add(59*time.Minute), i.ReservedUntil, "the minimum less the release margin")
		}
		passes(t, m, 40*time.Minute)
		assert.Equal(t, 2, p.live(), "idle but inside the paid hour: kept")
		passes(t, m, 30*time.Minute)
		// One is released at the end of its window; the fleet shrinks to
		// MinNodes instead of replacing it, and the last node stays.
		assert.Equal(t, 1, log.count(EventInstanceTerminated))
		assert.Equal(t, 1, p.live())
		assert.Equal(t, 1, m.Fleets()[0].Nodes)
		passes(t, m, 3*time.Hour)
		assert.Equal(t, 1, p.live(), "never idle below MinNodes")
	})
}

func TestManagerRetriesReleaseUntilConfirmedAndAlerts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		m, log := newTestManager(t, Config{Providers: []Provider{p}, Policy: Policy{Release: ReleaseNow}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 3*time.Minute)
		for range 100 { // retried every 30 s: every minute is billed (per-minute offer)
			p.deleteErr = append(p.deleteErr, ErrLocked)
		}
		require.NoError(t, m.Delete(t.Context(), "f"))
		passes(t, m, 20*time.Minute)
		assert.Equal(t, 1, p.live(), "still refused")
		assert.Equal(t, StatusTerminating, m.Instances("f")[0].Status)
		assert.Equal(t, 1, log.count(EventTerminationStuck))
		passes(t, m, 3*time.Hour)
		assert.Zero(t, p.live())
		assert.Equal(t, StatusTerminated, m.Instances("f")[0].Status)
		assert.Equal(t, 1, log.count(EventFleetDeleted))
		assert.Empty(t, m.Fleets())
	})
}

func TestManagerNeverRecreatesAfterUncertainCreate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		p.createErr, p.commitErr = []error{errors.New("HTTP 500")}, true
		m, log := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 5*time.Minute)
		assert.Equal(t, 1, p.count("create"))
		assert.Equal(t, 1, p.live())
		assert.Equal(t, 1, log.count(EventCreateUncertain))
		insts := m.Instances("f")
		require.Len(t, insts, 1)
		assert.NotEmpty(t, insts[0].ID, "found by its label")
		assert.Equal(t, StatusIdle, insts[0].Status)
	})
}

func TestManagerRestartedWithoutStoreAdoptsByLabel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		m1, _ := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m1.Apply(t.Context(), Spec{Name: "f", Nodes: 2}))
		passes(t, m1, 5*time.Minute)
		m1.Close()
		m2, log := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m2.Apply(t.Context(), Spec{Name: "f", Nodes: 2}))
		passes(t, m2, time.Minute)
		assert.Equal(t, 2, log.count(EventInstanceAdopted))
		assert.Equal(t, 2, p.count("create"), "nothing created again")
		assert.Equal(t, 2, statuses(m2.Instances("f"))[StatusIdle])
	})
}

func TestManagerCollectsOrphansAfterGraceAndLeavesUnlabelledAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		_, _ = p.Create(context.Background(), CreateRequest{Label: Label{Owner: "t1", Fleet: "gone", RequestID: "0123456789ab"}})
		_, _ = p.Create(context.Background(), CreateRequest{}) // unlabelled
		m, log := newTestManager(t, Config{Providers: []Provider{p}, Policy: Policy{OrphanGrace: 10 * time.Minute}})
		passes(t, m, 9*time.Minute)
		assert.Equal(t, 2, p.live())
		passes(t, m, 3*time.Minute)
		assert.Equal(t, 1, p.live(), "the orphan is released, the unlabelled one is not")
		assert.Equal(t, 1, log.count(EventUnlabelledFound), "reported once")
		assert.Equal(t, 1, log.count(EventOrphanFound))
	})
}

func TestManagerForcedReleaseReportsTheUnrefundedMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("hotaisle", vmOffer("hotaisle", 6, time.Hour))
		m, log := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 6*time.Minute)
		id := m.Instances("f")[0].ID
		at, err := m.Release(t.Context(), id)
		require.NoError(t, err)
		assert.Equal(t, m.Instances("f")[0].ReservedUntil, at, "default policy: the caller sees the earliest release")
		at, err = m.Release(t.Context(), id, WithReleasePolicy(ReleaseNow))
		require.NoError(t, err)
		assert.Equal(t, time.Now(), at)
		require.NoError(t, m.Reconcile(t.Context())) // the loop carries the intents out
		e, ok := log.first(EventReleaseForced)
		require.True(t, ok)
		assert.InDelta(t, 6*54.0/60, e.USD, 0.11)
	})
}

func TestManagerCompatUntracksRefusedBareMetalWithAnAlert(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := vmOffer("hotaisle", 27.12, 8*time.Hour)
		o.BareMetal = true
		p := newFakeProvider("hotaisle", o)
		m, log := newTestManager(t, Config{Providers: []Provider{p}, Policy: Policy{Release: ReleaseCompat}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 3*time.Minute)
		for range 100 {
			p.deleteErr = append(p.deleteErr, ErrMinReservation)
		}
		require.NoError(t, m.Delete(t.Context(), "f"))
		passes(t, m, 20*time.Minute)
		assert.Equal(t, 1, log.count(EventManualCleanup))
		assert.Equal(t, 1, p.live(), "compat mode leaves it billing, loudly")
		passes(t, m, time.Hour)
		assert.Zero(t, log.count(EventOrphanFound), "what it told the operator to release by hand is not taken back")
		// Released by hand, then rented again under its name (Hot Aisle bare
		// metal returns to the pool) by a create of this owner whose record is
		// lost: a new rental, with a new request id in its label, is found.
		p.mu.Lock()
		for _, fi := range p.insts {
			fi.inst.RequestID = NewRequestID()
		}
		p.mu.Unlock()
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "g", Nodes: 1})) // something to watch: listings
		passes(t, m, 3*time.Hour)
		assert.Equal(t, 1, log.count(EventOrphanFound), "a new rental of the abandoned server's name is not abandoned")
	})
}

func TestManagerClusterCreatesVPCAfterFirstMemberAndDeletesItLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		p.attachErr = []error{ErrAttachFailed, ErrAttachFailed}
		m, log := newTestManager(t, Config{Providers: []Provider{p}, Policy: Policy{Release: ReleaseNow}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "c", Nodes: 2, Placement: PlacementCluster}))
		passes(t, m, 5*time.Minute)
		assert.Equal(t, 1, p.count("createvpc"))
		assert.Equal(t, 2, log.count(EventVPCAttached))
		for _, i := range m.Instances("c") {
			assert.NotEmpty(t, i.VPCID)
		}
		require.NoError(t, m.Delete(t.Context(), "c"))
		passes(t, m, 5*time.Minute)
		assert.Zero(t, p.live())
		vpcs, _ := p.ListVPCs(t.Context())
		assert.Empty(t, vpcs)
		assert.Equal(t, 1, log.count(EventFleetDeleted))
	})
}

func TestManagerOutageConcludesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		m, _ := newTestManager(t, Config{Providers: []Provider{p}, Policy: Policy{Release: ReleaseNow}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 3*time.Minute)
		p.listErr = ErrUnavailable
		for range 60 { // retried every 30 s: every minute is billed (per-minute offer)
			p.deleteErr = append(p.deleteErr, ErrUnavailable)
		}
		require.NoError(t, m.Delete(t.Context(), "f"))
		passes(t, m, 20*time.Minute)
		assert.Equal(t, StatusTerminating, m.Instances("f")[0].Status)
		p.listErr = nil
		passes(t, m, 2*time.Hour)
		assert.Equal(t, StatusTerminated, m.Instances("f")[0].Status)
		assert.Zero(t, p.live())
	})
}

func TestReservationWindowPerBillingRule(t *testing.T) {
	m, err := NewManager(Config{Providers: []Provider{newFakeProvider("x")}})
	require.NoError(t, err)
	defer m.Close()
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	rec := func(o Offer) *InstanceRecord {
		return &InstanceRecord{Instance: Instance{Provider: "x", Offer: o, Created: t0}}
	}
	hourly := rec(Offer{BillingGranularity: time.Hour, MinimumReservation: time.Hour})
	m.startedAt, m.settleSince = t0, t0
	assert.Equal(t, t0.Add(50*time.Minute), m.reservedUntil(hourly, t0.Add(5*time.Minute)), "just started: the wide margin")
	m.startedAt, m.settleSince = t0.Add(-time.Hour), t0.Add(-time.Hour) // long started: calm
	assert.Equal(t, t0.Add(57*time.Minute), m.reservedUntil(hourly, t0.Add(5*time.Minute)), "inside the first hour, less the calm margin")
	assert.Equal(t, t0.Add(117*time.Minute), m.reservedUntil(hourly, t0.Add(70*time.Minute)), "rolls to the current billed hour")
	assert.Equal(t, t0.Add(57*time.Minute), m.reservedUntil(hourly, t0.Add(58*time.Minute)), "inside the margin: due now")
	m.unsettled["x"] = t0.Add(time.Minute) // a call of the provider failed
	assert.Equal(t, t0.Add(50*time.Minute), m.reservedUntil(hourly, t0.Add(5*time.Minute)), "unsettled: the wide margin")
	assert.Equal(t, t0.Add(117*time.Minute), m.reservedUntil(hourly, t0.Add(70*time.Minute)), "calm again 30 minutes later")
	perMinute := rec(Offer{BillingGranularity: time.Minute, MinimumReservation: 8 * time.Hour})
	assert.Equal(t, t0.Add(8*time.Hour-time.Minute), m.reservedUntil(perMinute, t0.Add(3*time.Hour)), "the minimum less a minute")
	none := rec(Offer{BillingGranularity: time.Minute})
	assert.Equal(t, t0, m.reservedUntil(none, t0.Add(time.Hour)), "no minimum: no window")
}

// A caller that cancels its context cannot lose the answer of a create that
// may already have happened: the create call runs detached.
func TestManagerCreateSurvivesACancelledCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		m, _ := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		ctx, cancel := context.WithCancel(t.Context())
		p.onCreate = cancel // the caller gives up while the create is under way
		_ = m.Reconcile(ctx)
		synctest.Wait() // the detached create finishes after the pass returned
		p.mu.Lock()
		seen := slices.Clone(p.createCtx)
		p.mu.Unlock()
		require.Equal(t, []error{nil}, seen, "the create saw a live context")
		require.NoError(t, m.Reconcile(t.Context()), "the next pass takes the answer")
		insts := m.Instances("f")
		require.Len(t, insts, 1)
		assert.NotEmpty(t, insts[0].ID, "and its answer was recorded")
	})
}

// An hourly instance idle after its hour's safe point is released at once,
// never carried into the next hour by an idle timer that started late; one
// idle earlier waits for the safe point (the hour is paid anyway).
func TestHourlyIdleReleaseNeverBuysTheNextHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := vmOffer("vultr", 1, time.Hour)
		o.BillingGranularity = time.Hour
		p := newFakeProvider("vultr", o)
		m, _ := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 2, IdleTimeout: 5 * time.Minute}))
		passes(t, m, 3*time.Minute)
		insts := m.Instances("f")
		require.Len(t, insts, 2)
		created := insts[0].Created
		for _, i := range insts {
			require.NoError(t, m.MarkBusy(i.ID))
		}
		passes(t, m, time.Until(created.Add(time.Hour+20*time.Minute))) // the second hour
		require.NoError(t, m.MarkIdle(insts[0].ID))                     // idle at 1:20: waits for 1:57
		passes(t, m, time.Until(created.Add(time.Hour+58*time.Minute+30*time.Second)))
		require.NoError(t, m.MarkIdle(insts[1].ID)) // idle at 1:58:30, past the safe point
		passes(t, m, 3*time.Minute)
		gone := map[string]time.Time{}
		for _, i := range m.Instances("f") {
			require.Equal(t, StatusTerminated, i.Status)
			gone[i.ID] = i.History[len(i.History)-1].Time
		}
		assert.WithinDuration(t, created.Add(time.Hour+57*time.Minute), gone[insts[0].ID], 20*time.Second, "at the safe point")
		assert.True(t, gone[insts[1].ID].Before(created.Add(2*time.Hour)), "released inside the second hour, not carried into the third")
	})
}

// Acquire hands out the idle instance with the most paid time left, once.
func TestAcquirePicksTheMostPaidTimeLeftAndNeverTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := vmOffer("vultr", 1, time.Hour)
		o.BillingGranularity = time.Hour
		p := newFakeProvider("vultr", o)
		m, _ := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 30*time.Minute)
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 2}))
		passes(t, m, 10*time.Minute)
		insts := m.Instances("f")
		require.Len(t, insts, 2)
		older, newer := insts[0], insts[1]
		got := make(chan Instance, 2)
		for range 2 {
			go func() {
				i, err := m.Acquire(t.Context(), "f")
				assert.NoError(t, err)
				got <- i
			}()
		}
		first, second := <-got, <-got
		assert.NotEqual(t, first.ID, second.ID, "never the same instance twice")
		assert.ElementsMatch(t, []string{older.ID, newer.ID}, []string{first.ID, second.ID})
		_, err := m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, ErrNoIdle)
		require.NoError(t, m.Reconcile(t.Context()))
		assert.Equal(t, 2, statuses(m.Instances("f"))[StatusBusy])
		require.NoError(t, m.MarkIdle(older.ID))
		require.NoError(t, m.MarkIdle(newer.ID))
		require.NoError(t, m.Reconcile(t.Context()))
		best, err := m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		assert.Equal(t, newer.ID, best.ID, "the newer one has more of its paid hour left")
		_, err = m.Acquire(t.Context(), "nope")
		assert.ErrorIs(t, err, ErrNotFound)
	})
}
