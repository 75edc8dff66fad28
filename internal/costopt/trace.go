package costopt

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Job is one unit of work that needs one machine of one kind for Duration,
// from Arrive on. Both are offsets from the start of the trace.
type Job struct {
	ID       int
	Arrive   time.Duration
	Duration time.Duration
}

// End is the time the job ends when it starts at its arrival.
func (j Job) End() time.Duration { return j.Arrive + j.Duration }

// Trace is a workload: jobs sorted by arrival (ties by ID).
type Trace struct {
	Jobs []Job
}

// Validate returns an error when a job has a duration that is not positive,
// two jobs share an ID, or the jobs are not sorted by arrival and then ID.
func (t Trace) Validate() error {
	seen := make(map[int]bool, len(t.Jobs))
	for i, j := range t.Jobs {
		if j.Duration <= 0 {
			return fmt.Errorf("costopt: job %d has duration %v", j.ID, j.Duration)
		}
		if seen[j.ID] {
			return fmt.Errorf("costopt: job ID %d appears twice", j.ID)
		}
		seen[j.ID] = true
		if i > 0 && jobLess(j, t.Jobs[i-1]) {
			return fmt.Errorf("costopt: job %d is out of arrival order", j.ID)
		}
	}
	return nil
}

// Core is the part of t's jobs that runs whenever each starts within wait
// of its arrival: every job longer than wait, from its arrival plus wait to
// its end (the shorter ones are dropped). The optimum of Core(t, wait),
// billed alike, is a lower bound of the bill of any plan for t in which no
// job waits longer than wait: each job then runs over its core interval, and
// the machine that runs it was created at least a boot time before it
// starts (at most its core's arrival) and deleted after its end, so the
// plan's machines serve the core trace with no job waiting, as the
// optimum's do. Core(t, 0) is t.
func Core(t Trace, wait time.Duration) Trace {
	var out Trace
	for _, j := range t.Jobs {
		if j.Duration > wait {
			out.Jobs = append(out.Jobs, Job{ID: j.ID, Arrive: j.Arrive + wait, Duration: j.Duration - wait})
		}
	}
	return out
}

func jobLess(a, b Job) bool {
	return a.Arrive < b.Arrive || a.Arrive == b.Arrive && a.ID < b.ID
}

// Workload describes the random traces Generate draws. Jobs arrive in bursts:
// a burst starts at a uniformly random time in [0, Horizon), holds a
// geometrically distributed number of jobs with mean MeanBurst, and its jobs
// arrive one after the other with exponentially distributed gaps of mean
// BurstGap. Durations are log-uniform in [MinDuration, MaxDuration].
// Arrivals and durations are rounded to whole seconds (durations then kept
// within their bounds).
type Workload struct {
	Jobs        int
	Horizon     time.Duration
	MinDuration time.Duration
	MaxDuration time.Duration
	MeanBurst   float64 // jobs per burst, at least 1 (1 means no bursts)
	BurstGap    time.Duration
}

// DefaultWorkload is 50 jobs over 12 hours, 5 minutes to 3 hours each, in
// bursts of 3 jobs on average arriving 2 minutes apart on average.
func DefaultWorkload() Workload {
	return Workload{Jobs: 50, Horizon: 12 * time.Hour, MinDuration: 5 * time.Minute,
		MaxDuration: 3 * time.Hour, MeanBurst: 3, BurstGap: 2 * time.Minute}
}

// Validate returns an error for a workload Generate cannot draw from.
func (w Workload) Validate() error {
	switch {
	case w.Jobs < 0:
		return errors.New("costopt: negative number of jobs")
	case w.Horizon < time.Second:
		return errors.New("costopt: horizon shorter than a second")
	case w.MinDuration < time.Second || w.MaxDuration < w.MinDuration:
		return errors.New("costopt: durations must satisfy 1s <= MinDuration <= MaxDuration")
	case !(w.MeanBurst >= 1):
		return errors.New("costopt: mean burst size must be at least 1")
	case w.BurstGap < 0:
		return errors.New("costopt: negative burst gap")
	}
	return nil
}

// Generate draws a trace from w. The same workload and seed give the same
// trace (the generator is a PCG seeded with seed, and every draw is derived
// from its raw 64-bit output). Job IDs are 0..Jobs-1 in arrival order.
// Arrivals past the horizon are clamped to its last second.
func Generate(w Workload, seed uint64) (Trace, error) {
	if err := w.Validate(); err != nil {
		return Trace{}, err
	}
	r := draw{rand.NewPCG(seed, 0x9e3779b97f4a7c15)}
	jobs := make([]Job, 0, w.Jobs)
	last := w.Horizon.Truncate(time.Second) - time.Second
	for len(jobs) < w.Jobs {
		at := time.Duration(r.float() * float64(w.Horizon))
		for n := r.geometric(w.MeanBurst); n > 0 && len(jobs) < w.Jobs; n-- {
			jobs = append(jobs, Job{
				Arrive:   min(at.Round(time.Second), last),
				Duration: r.logUniform(w.MinDuration, w.MaxDuration).Round(time.Second),
			})
			at += time.Duration(r.exp() * float64(w.BurstGap))
		}
	}
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp.Compare(a.Arrive, b.Arrive) })
	for i := range jobs {
		jobs[i].ID = i
		jobs[i].Duration = min(max(jobs[i].Duration, w.MinDuration), w.MaxDuration)
	}
	return Trace{Jobs: jobs}, nil
}

// draw derives the distributions from raw PCG output only, so that traces do
// not depend on the standard library's derivation functions.
type draw struct{ src *rand.PCG }

// float is uniform in [0, 1).
func (d draw) float() float64 { return float64(d.src.Uint64()>>11) / (1 << 53) }

// exp is exponential with mean 1.
func (d draw) exp() float64 { return -math.Log1p(-d.float()) }

// geometric is a count >= 1 with the given mean.
func (d draw) geometric(mean float64) int {
	n, stay := 1, 1-1/mean
	for d.float() < stay {
		n++
	}
	return n
}

func (d draw) logUniform(lo, hi time.Duration) time.Duration {
	l, h := math.Log(float64(lo)), math.Log(float64(hi))
	return time.Duration(math.Exp(l + d.float()*(h-l)))
}
