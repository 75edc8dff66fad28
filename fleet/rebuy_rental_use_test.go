package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// onNode is n jobs of used each on node, the first at from and each next
// one gap after the previous one ended.
func onNode(node string, from time.Time, n int, used, gap time.Duration) []BusyPeriod {
	var out []BusyPeriod
	for i := range n {
		out = append(out, BusyPeriod{Start: from.Add(time.Duration(i) * (used + gap)), Used: used, Minimum: 8 * time.Hour, Node: node})
	}
	return out
}

// The break-even hold is what a re-buy wastes: its boot (billed inside the
// minimum, never used) and the rest of the minimum the run of jobs on the
// new node would leave idle, measured per node's run of jobs, not per job.
func TestRebuyPriorMeasuresWhatARentalUses(t *testing.T) {
	bm := vmOffer("hotaisle", 27.12, 8*time.Hour)
	bm.TypicalBoot = 10 * time.Minute
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	long := onNode("a", t0, 4, 9*time.Hour, 3*time.Minute)
	end := long[3].Start.Add(long[3].Used)
	assert.Equal(t, rebuyChoice{1, 10 * time.Minute}, rebuyPrior(bm, long, end.Add(time.Minute)),
		"jobs longer than the minimum: a re-buy still wastes its boot (was 0)")

	stream := onNode("a", t0, 32, 30*time.Minute, 0)
	end = stream[31].Start.Add(stream[31].Used)
	assert.Equal(t, rebuyChoice{1, 10 * time.Minute}, rebuyPrior(bm, stream, end.Add(time.Minute)),
		"jobs back to back fill a new minimum: the boot (was 8 h − 30 min)")
	use, n := rentalUse(stream, bm, end.Add(time.Minute))
	assert.Equal(t, 8*time.Hour-10*time.Minute, use)
	assert.Equal(t, 32, n)

	var apart []BusyPeriod // the same jobs, each on a node of its own
	for i, j := range stream {
		j.Node = string(rune('a' + i))
		apart = append(apart, j)
	}
	assert.Equal(t, rebuyChoice{1, 7*time.Hour + 30*time.Minute}, rebuyPrior(bm, apart, end.Add(time.Minute)),
		"one job per node: a new minimum less one job")

	spaced := onNode("a", t0, 24, 30*time.Minute, 15*time.Minute) // a run per job: 15 min > the boot
	end = spaced[23].Start.Add(spaced[23].Used)
	use, _ = rentalUse(spaced, bm, end.Add(time.Minute))
	assert.Greater(t, use, 4*time.Hour, "a run's use counts the jobs that follow on its node inside the minimum, not one job's 30 min")
	assert.Less(t, use, 7*time.Hour*30/45, "at most two thirds of it (the last runs' minimums are cut short by now)")

	var waves []BusyPeriod // ten nodes, a 15-min job each every 30 min for 3 h, the next wave under way
	for i := range 10 {
		node := onNode(string(rune('a'+i)), t0, 7, 15*time.Minute, 15*time.Minute)
		node[6].Used = 5 * time.Minute
		waves = append(waves, node...)
	}
	during := rebuyPrior(bm, waves, t0.Add(3*time.Hour+5*time.Minute))
	assert.Greater(t, during.hold, 6*time.Hour,
		"while a wave runs, only the runs under way are censored: the hold is not cut to the boot")
}
