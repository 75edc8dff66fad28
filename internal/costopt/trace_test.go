package costopt

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGenerateDeterministic(t *testing.T) {
	w := DefaultWorkload()
	a, err := Generate(w, 7)
	require.NoError(t, err)
	b, err := Generate(w, 7)
	require.NoError(t, err)
	c, err := Generate(w, 8)
	require.NoError(t, err)
	assert.Equal(t, a, b, "same seed, same trace")
	assert.NotEqual(t, a, c, "another seed, another trace")
}

func TestGenerateShape(t *testing.T) {
	w := DefaultWorkload()
	for seed := range uint64(20) {
		tr, err := Generate(w, seed)
		require.NoError(t, err)
		require.NoError(t, tr.Validate())
		require.Len(t, tr.Jobs, w.Jobs)
		for i, j := range tr.Jobs {
			assert.Equal(t, i, j.ID, "IDs in arrival order")
			assert.True(t, j.Arrive >= 0 && j.Arrive < w.Horizon, "arrival %v within the horizon", j.Arrive)
			assert.True(t, j.Duration >= w.MinDuration && j.Duration <= w.MaxDuration, "duration %v", j.Duration)
			assert.Zero(t, j.Arrive%time.Second+j.Duration%time.Second, "whole seconds")
		}
	}
}

// TestGenerateDistributions checks the draws on a large trace: durations
// are log-uniform (median near the geometric mean of the bounds, 30 min),
// and bursts put far more arrivals close together than a Poisson stream of
// one job an hour, which has 1-exp(-2/60), about 3%, of its gaps under 2
// minutes.
func TestGenerateDistributions(t *testing.T) {
	w := DefaultWorkload()
	w.Jobs, w.Horizon = 4000, 4000*time.Hour
	tr, err := Generate(w, 1)
	require.NoError(t, err)
	durs := make([]time.Duration, len(tr.Jobs))
	close := 0
	for i, j := range tr.Jobs {
		durs[i] = j.Duration
		if i > 0 && j.Arrive-tr.Jobs[i-1].Arrive < 2*time.Minute {
			close++
		}
	}
	slices.Sort(durs)
	median := durs[len(durs)/2]
	assert.InDelta(t, 30, median.Minutes(), 4, "median duration")
	assert.Greater(t, float64(close)/float64(len(tr.Jobs)), 0.3, "share of arrivals within 2 minutes of the previous one")

	w.MeanBurst = 1
	flat, err := Generate(w, 1)
	require.NoError(t, err)
	closeFlat := 0
	for i := 1; i < len(flat.Jobs); i++ {
		if flat.Jobs[i].Arrive-flat.Jobs[i-1].Arrive < 2*time.Minute {
			closeFlat++
		}
	}
	assert.Less(t, float64(closeFlat)/float64(len(flat.Jobs)), 0.06, "no bursts: arrivals spread out")
}

func TestWorkloadValidate(t *testing.T) {
	bad := map[string]func(w *Workload){
		"negative jobs":      func(w *Workload) { w.Jobs = -1 },
		"short horizon":      func(w *Workload) { w.Horizon = time.Millisecond },
		"zero min duration":  func(w *Workload) { w.MinDuration = 0 },
		"max below min":      func(w *Workload) { w.MaxDuration = w.MinDuration - time.Second },
		"burst below one":    func(w *Workload) { w.MeanBurst = 0.5 },
		"burst not a number": func(w *Workload) { w.MeanBurst = nan() },
		"negative gap":       func(w *Workload) { w.BurstGap = -time.Second },
	}
	for name, spoil := range bad {
		w := DefaultWorkload()
		spoil(&w)
		_, err := Generate(w, 1)
		assert.Error(t, err, name)
	}
	tr, err := Generate(Workload{Horizon: time.Hour, MinDuration: time.Minute, MaxDuration: time.Minute, MeanBurst: 1}, 1)
	require.NoError(t, err)
	assert.Empty(t, tr.Jobs)
}

func TestTraceValidate(t *testing.T) {
	m := time.Minute
	assert.NoError(t, Trace{}.Validate())
	assert.Error(t, Trace{Jobs: []Job{{ID: 1, Arrive: 0, Duration: 0}}}.Validate(), "zero duration")
	assert.Error(t, Trace{Jobs: []Job{{ID: 1, Duration: m}, {ID: 1, Arrive: m, Duration: m}}}.Validate(), "duplicate ID")
	assert.Error(t, Trace{Jobs: []Job{{ID: 1, Arrive: m, Duration: m}, {ID: 2, Duration: m}}}.Validate(), "out of order")
	assert.Error(t, Trace{Jobs: []Job{{ID: 2, Duration: m}, {ID: 1, Duration: m}}}.Validate(), "tie out of ID order")
	assert.NoError(t, Trace{Jobs: []Job{{ID: 1, Duration: m}, {ID: 2, Duration: m}}}.Validate())
}

func nan() float64 { zero := 0.0; return zero / zero }
