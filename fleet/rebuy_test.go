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
func jobsEvery(t0 time.Time, n, burst int, gap, used time.Duration) []busyPeriod {
	var out []busyPeriod
	for i := range n {
		for b := range burst {
			out = append(out, busyPeriod{start: t0.Add(time.Duration(i)*gap + time.Duration(b)*time.Minute), used: used})
		}
	}
	return out
}

func TestBestRebuyFromTheFleetsJobs(t *testing.T) {
	o := vmOffer("hotaisle", 2.99, 30*time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	eighth := 30 * time.Minute / 8
	cases := []struct {
		name string
		jobs []busyPeriod
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
			assert.Equal(t, c.want, bestRebuy(c.jobs, o, t0.Add(8*time.Hour)))
		})
	}
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
	assert.Equal(t, 40*time.Minute, replayRebuy(jobs[:1], o, rebuyChoice{1, 15 * time.Minute}, t0.Add(40*time.Minute)), "a hold counted up to now")
}

// A fleet whose last job came 2 minutes after its node's minimum ended
// keeps its next idle node past the minimum; without that history, or with
// RebuyHoldOff, an idle node is released once its minimum and IdleTimeout
// have passed.
func TestRebuyHoldLearnsFromTheFleetsJobs(t *testing.T) {
	for _, off := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			p := newFakeProvider("hotaisle", vmOffer("hotaisle", 2.99, 30*time.Minute))
			m, _ := newTestManager(t, Config{Providers: []Provider{p}, Policy: Policy{RebuyHoldOff: off}})
			spec := Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute}
			job := func() Instance {
				require.NoError(t, m.Apply(t.Context(), spec))
				for range 60 {
					if _, err := m.Acquire(t.Context(), "f"); err == nil {
						break
					}
					passes(t, m, 10*time.Second)
				}
				inst := m.Instances("f")[len(m.Instances("f"))-1]
				require.NoError(t, m.Reconcile(t.Context()))
				require.Equal(t, StatusBusy, m.Instances("f")[len(m.Instances("f"))-1].Status)
				passes(t, m, 5*time.Minute)
				require.NoError(t, m.MarkIdle(inst.ID))
				return inst
			}
			first := job()
			passes(t, m, time.Until(first.Created.Add(30*time.Minute)))
			require.Zero(t, p.live(), "no jobs to learn from: released at the end of the minimum")
			passes(t, m, 2*time.Minute)
			second := job() // it bought a new minimum
			minEnd := second.Created.Add(30 * time.Minute)
			passes(t, m, time.Until(minEnd.Add(2*time.Minute)))
			if off {
				assert.Zero(t, p.live(), "RebuyHoldOff: released at the end of the minimum")
				return
			}
			assert.Equal(t, 1, p.live(), "held past the minimum: the last job came 2 minutes after one")
			passes(t, m, 3*time.Minute)
			assert.Zero(t, p.live(), "released when the hold (an eighth of the minimum) is over")
		})
	}
}

// The hold keeps as many idle nodes as it says, the first in Acquire's
// order; the others go once their minimum and IdleTimeout have passed.
func TestRebuyHoldKeepsItsSpares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := vmOffer("hotaisle", 2.99, 30*time.Minute)
		p := newFakeProvider("hotaisle", o)
		m, _ := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 3, IdleTimeout: time.Minute}))
		passes(t, m, time.Minute)
		require.Equal(t, 3, p.live())
		m.mu.Lock() // six jobs in the last 3 hours, each 2 minutes after a minimum ended: one spare
		m.rebuy = map[string]*rebuyLog{"f": {since: map[string]time.Time{}, chosen: -1,
			done: jobsEvery(time.Now().Add(-3*time.Hour+time.Minute), 6, 1, 32*time.Minute, 5*time.Minute)}}
		m.mu.Unlock()
		created := m.Instances("f")[0].Created
		passes(t, m, time.Until(created.Add(32*time.Minute)))
		assert.Equal(t, 1, p.live(), "one spare held past the minimum")
		passes(t, m, 3*time.Minute)
		assert.Zero(t, p.live(), "the spare goes when its hold is over")
	})
}
