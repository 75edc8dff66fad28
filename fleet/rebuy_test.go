package fleet

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jobsEvery is n jobs of used each, the first at t0 and then every gap,
// burst at a time (the jobs of a burst a minute apart).
func jobsEvery(t0 time.Time, n, burst int, gap, used time.Duration) []BusyPeriod {
	var out []BusyPeriod
	for i := range n {
		for b := range burst {
			out = append(out, BusyPeriod{Start: t0.Add(time.Duration(i)*gap + time.Duration(b)*time.Minute), Used: used})
		}
	}
	return out
}

// withMinimum sets the minimum reservation of jobs' nodes.
func withMinimum(jobs []BusyPeriod, minimum time.Duration) []BusyPeriod {
	for i := range jobs {
		jobs[i].Minimum = minimum
	}
	return jobs
}

func TestBestRebuyFromTheFleetsJobs(t *testing.T) {
	o := vmOffer("hotaisle", 2.99, 30*time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	eighth := 30 * time.Minute / 8
	cases := []struct {
		name string
		jobs []BusyPeriod
		want rebuyChoice
	}{
		{"no jobs: no hold", nil, rebuyChoice{}},
		// 5-minute jobs 32 minutes apart: each comes 2 minutes after the
		// previous node's minimum ended; an eighth of the minimum catches it.
		{"jobs just after the minimum: one spare", jobsEvery(t0, 6, 1, 32*time.Minute, 5*time.Minute), rebuyChoice{1, eighth}},
		{"bursts of three: three spares", jobsEvery(t0, 6, 3, 32*time.Minute, 5*time.Minute), rebuyChoice{3, eighth}},
		{"long gaps: no hold", jobsEvery(t0, 6, 1, 2*time.Hour, 5*time.Minute), rebuyChoice{}},
		{"jobs as long as the minimum: a new node wastes nothing", jobsEvery(t0, 6, 1, 32*time.Minute, 30*time.Minute), rebuyChoice{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, bestRebuy(c.jobs, o, t0, true, t0.Add(8*time.Hour)))
		})
	}
}

// While a fleet's jobs span less than one and a half minimums the replay
// cannot judge a hold, and the break-even hold is the default, from the
// first job: one job, or one batch, keeps its nodes one minimum past their
// own, so that the next job does not buy a new minimum.
func TestBestRebuyDefaultsToTheBreakEvenHoldUntilTheJobsCanTell(t *testing.T) {
	bm := vmOffer("hotaisle", 23.92, 8*time.Hour)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	returning := []BusyPeriod{{Start: t0, Used: time.Hour}, {Start: t0.Add(2 * time.Hour), Used: time.Hour}}
	assert.Equal(t, rebuyChoice{1, 8 * time.Hour}, bestRebuy(returning, bm, t0, true, t0.Add(9*time.Hour)), "9 h of jobs < 12 h; one ran at a time")
	assert.Equal(t, rebuyChoice{1, 8 * time.Hour}, bestRebuy(returning[:1], bm, t0, true, t0.Add(9*time.Hour)), "one job")
	batch := []BusyPeriod{{Start: t0, Used: time.Hour}, {Start: t0.Add(time.Minute), Used: 3 * time.Hour}}
	assert.Equal(t, rebuyChoice{2, 8 * time.Hour}, bestRebuy(batch, bm, t0, true, t0.Add(9*time.Hour)), "one batch of two")
	var wave []BusyPeriod
	for range 10 {
		wave = append(wave, BusyPeriod{Start: t0.Add(7 * time.Hour), Used: 15 * time.Minute})
	}
	assert.Equal(t, rebuyChoice{10, 7*time.Hour + 45*time.Minute}, bestRebuy(wave, bm, t0, true, t0.Add(7*time.Hour+30*time.Minute)),
		"a wave of 10 jobs in the last hour: 10 held, as long as a re-buy for a 15-minute job would waste")
	long := []BusyPeriod{{Start: t0, Used: 13 * time.Hour}}
	assert.Equal(t, rebuyPrior(bm, long, t0.Add(13*time.Hour)), bestRebuy(long, bm, t0, false, t0.Add(13*time.Hour)),
		"past 12 h, but no node idled past its minimum yet")
	assert.NotEqual(t, rebuyPrior(bm, returning, t0.Add(13*time.Hour)), bestRebuy(returning, bm, t0, true, t0.Add(13*time.Hour)),
		"past 12 h, a node idled past its minimum: the jobs decide")
	sparse := []BusyPeriod{{Start: t0, Used: time.Hour}, {Start: t0.Add(20 * time.Hour), Used: time.Hour}}
	assert.Equal(t, rebuyChoice{}, bestRebuy(sparse, bm, t0, true, t0.Add(22*time.Hour)), "a hold that did not pay")
	later := []BusyPeriod{{Start: t0, Used: time.Hour}, {Start: t0.Add(12 * time.Hour), Used: time.Hour}}
	assert.Equal(t, rebuyChoice{}, bestRebuy(later, bm, t0, true, t0.Add(14*time.Hour)),
		"past 12 h, a hold that saved less than a minimum: no hold")
	assert.Equal(t, rebuyPrior(bm, later, t0.Add(14*time.Hour)), bestRebuy(later, bm, t0.Add(3*time.Hour), true, t0.Add(14*time.Hour)),
		"the span counts from the fleet's first job, not the first replayed")
	var waves []BusyPeriod
	for _, at := range []time.Duration{0, 3 * time.Hour} {
		for range 12 {
			waves = append(waves, BusyPeriod{Start: t0.Add(at), Used: time.Hour})
		}
	}
	assert.Equal(t, rebuyChoice{12, 7 * time.Hour}, rebuyPrior(bm, waves[:12], t0.Add(90*time.Minute)), "a wave of 12, whenever asked")
	assert.Equal(t, rebuyChoice{12, 7 * time.Hour}, rebuyPrior(bm, waves, t0.Add(5*time.Hour)), "the last wave's peak, an hour after it")
	next := append(waves, BusyPeriod{Start: t0.Add(6 * time.Hour)}) // the next wave's first job, under way
	assert.Equal(t, rebuyChoice{12, 7 * time.Hour}, rebuyPrior(bm, next, t0.Add(6*time.Hour)), "the last wave's peak while the next begins")
	assert.Equal(t, rebuyChoice{3, 8 * time.Hour}, rebuyPrior(bm, waves[:3], t0.Add(90*time.Minute)), "three jobs at once: a whole minimum")
	long4 := []BusyPeriod{{Start: t0, Used: 9 * time.Hour}, {Start: t0, Used: 9 * time.Hour}, {Start: t0, Used: 9 * time.Hour}, {Start: t0, Used: 3 * time.Hour}}
	assert.Equal(t, rebuyChoice{4, 75 * time.Minute}, rebuyPrior(bm, long4, t0.Add(10*time.Hour)), "jobs that use most of a minimum: a short hold")
	assert.Equal(t, 0, peakJobs(nil))
	assert.Equal(t, 1, peakJobs(returning))
	assert.Equal(t, 2, peakJobs(batch))
	queue := []BusyPeriod{{Start: t0, Used: time.Hour}, {Start: t0.Add(time.Hour), Used: time.Hour}}
	assert.Equal(t, 1, peakJobs(queue), "a job starting as another ends")
}

// The replay bills each node its alive time up to its release (or now),
// raised to the minimum.
func TestReplayRebuyBills(t *testing.T) {
	o := vmOffer("hotaisle", 2.99, 30*time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jobs := jobsEvery(t0, 2, 1, 32*time.Minute, 5*time.Minute) // at 0 and 32 min
	now := t0.Add(3 * time.Hour)
	assert.Equal(t, 60*time.Minute, replayRebuy(jobs, o, rebuyChoice{}, now), "two nodes, a minimum each")
	assert.Equal(t, 37*time.Minute+15*time.Minute, replayRebuy(jobs, o, rebuyChoice{1, 15 * time.Minute}, now),
		"one node until the second job ends, then held 15 minutes")
	assert.Equal(t, 32*time.Minute+30*time.Minute, replayRebuy(jobs, o, rebuyChoice{1, time.Minute}, now),
		"a hold shorter than the gap: released at its end, and a second node bought")
	assert.Equal(t, 30*time.Minute, replayRebuy(jobs[:1], o, rebuyChoice{}, t0.Add(25*time.Minute)), "the minimum at least")
	assert.Equal(t, 30*time.Minute, replayRebuy(jobs[:1], o, rebuyChoice{1, 15 * time.Minute}, t0.Add(40*time.Minute)),
		"a hold under way is not charged yet (whether it pays off is not known)")
	assert.Equal(t, 45*time.Minute, replayRebuy(jobs[:1], o, rebuyChoice{1, 15 * time.Minute}, t0.Add(50*time.Minute)), "an ended hold is")
	assert.Equal(t, 40*time.Minute, replayRebuy(jobsEvery(t0, 1, 1, 0, 40*time.Minute), o, rebuyChoice{1, 15 * time.Minute}, t0.Add(40*time.Minute)),
		"a job under way is charged up to now")
}

// Without recorded jobs a fleet holds nothing: an idle per-minute node is
// released at the end of its minimum.
func TestNoRebuyHoldWithoutJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("hotaisle", vmOffer("hotaisle", 2.99, 30*time.Minute))
		m, _ := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute}))
		passes(t, m, time.Minute)
		require.Equal(t, 1, p.live())
		created := m.Instances("f")[0].Created
		passes(t, m, time.Until(created.Add(28*time.Minute)))
		assert.Equal(t, 1, p.live(), "the minimum is paid anyway")
		passes(t, m, 2*time.Minute)
		assert.Zero(t, p.live(), "released at the end of the minimum")
	})
}

// A fleet whose recent jobs each came a couple of minutes after a node's
// minimum ended holds one idle node (the first in Acquire's order) for an
// eighth of the minimum past it; the others go at the end of their minimum,
// and all of them with RebuyHoldOff.
func TestRebuyHoldKeepsItsSpares(t *testing.T) {
	for _, off := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			o := vmOffer("hotaisle", 2.99, 30*time.Minute)
			p := newFakeProvider("hotaisle", o)
			m, _ := newTestManager(t, Config{Providers: []Provider{p}, Policy: Policy{RebuyHoldOff: off}})
			require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 3, IdleTimeout: time.Minute}))
			passes(t, m, 5*time.Minute)
			require.Equal(t, 3, p.live())
			inst, err := m.Acquire(t.Context(), "f")
			require.NoError(t, err)
			require.NoError(t, m.Reconcile(t.Context()))
			m.mu.Lock() // six jobs in the last 3 hours, 32 minutes apart
			m.fleets["f"].Jobs = withMinimum(jobsEvery(time.Now().Add(-3*time.Hour+time.Minute), 6, 1, 32*time.Minute, 5*time.Minute), 30*time.Minute)
			m.mu.Unlock()
			passes(t, m, 5*time.Minute)
			require.NoError(t, m.MarkIdle(inst.ID))
			created := m.Instances("f")[0].Created
			passes(t, m, time.Until(created.Add(32*time.Minute)))
			if off {
				assert.Zero(t, p.live(), "RebuyHoldOff: all released at the end of their minimum")
				return
			}
			assert.Equal(t, 1, p.live(), "one spare held past the minimum")
			passes(t, m, 3*time.Minute)
			assert.Zero(t, p.live(), "the spare goes when its hold is over")
		})
	}
}

// A node released while busy leaves no job running forever in the log, and
// a deleted fleet's log goes.
func TestRebuyLogForgetsWhatIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("hotaisle", vmOffer("hotaisle", 2.99, 30*time.Minute))
		m, _ := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 2, IdleTimeout: time.Minute}))
		passes(t, m, 5*time.Minute)
		inst, err := m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		require.NoError(t, m.Reconcile(t.Context()))
		m.mu.Lock()
		require.Len(t, m.rebuy["f"].since, 1, "one job running")
		m.mu.Unlock()
		_, err = m.Release(t.Context(), inst.ID, WithReleasePolicy(ReleaseNow))
		require.NoError(t, err)
		passes(t, m, 30*time.Minute) // the idle node, its minimum over, asks for a choice
		m.mu.Lock()
		assert.Empty(t, m.rebuy["f"].since, "released while busy: no longer running")
		m.mu.Unlock()
		require.NoError(t, m.Delete(t.Context(), "f"))
		passes(t, m, 40*time.Minute)
		m.mu.Lock()
		assert.NotContains(t, m.rebuy, "f", "the fleet is gone")
		m.mu.Unlock()
	})
}

// The break-even hold estimates what a job uses of a minimum from the
// jobs under way too: a fleet whose long jobs still run has seen only its
// short ones end, and holding nodes for re-buys as if every job were short
// cost Hot Aisle VMs 0.8% of the optimum on the cost benchmark (1.047 →
// 1.039). Jobs under way past the minimum count whole; those short of it
// are censored where they stand (Kaplan–Meier).
func TestRebuyPriorCountsTheJobsUnderWay(t *testing.T) {
	vm := vmOffer("hotaisle", 2.99, 30*time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(40 * time.Minute)
	short := func(at time.Duration) BusyPeriod { return BusyPeriod{Start: t0.Add(at), Used: 10 * time.Minute} }
	underWay := func(from time.Duration) BusyPeriod {
		return BusyPeriod{Start: t0.Add(from), Used: now.Sub(t0.Add(from))}
	}

	mean, n := rentalUse([]BusyPeriod{short(0), short(5 * time.Minute), underWay(0), underWay(2 * time.Minute)}, vm, now)
	assert.Equal(t, 20*time.Minute, mean, "two 10-minute jobs ended, two under way for 40 and 38 minutes: (10+10+30+30)/4")
	assert.Equal(t, 4, n)
	assert.Equal(t, rebuyChoice{4, 10 * time.Minute}, rebuyPrior(vm,
		[]BusyPeriod{short(0), short(5 * time.Minute), underWay(0), underWay(2 * time.Minute)}, now),
		"held as long as a re-buy wastes on average: 30 − 20 minutes (was 30 − 10, the jobs under way left out)")

	mean, n = rentalUse([]BusyPeriod{short(0), underWay(20 * time.Minute), {Start: t0, Used: 35 * time.Minute}}, vm, now)
	assert.Equal(t, 2, n, "the job under way for 20 minutes gives no whole answer")
	assert.InDelta(t, 10+20*2.0/3, mean.Minutes(), 0.01,
		"a third of the jobs ended at 10 min; the survivors use the rest of the minimum (one censored at 20)")

	mean, n = rentalUse([]BusyPeriod{short(0), short(0)}, vm, now)
	assert.Equal(t, 10*time.Minute, mean, "only ended jobs: their mean")
	assert.Equal(t, 2, n)
}
