package fleet_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/require"
)

// workJob is one job of a cost trace: it needs one node from Arrive (an
// offset from the start) for Duration.
type workJob struct {
	Arrive, Duration time.Duration
}

// driveResult is what an orchestrator on gpufleet paid and how long its
// jobs waited, from the fakes' ledgers.
type driveResult struct {
	BillUSD float64
	Billed  []time.Duration // per machine, after the clouds' rounding and minimums
	Waits   []time.Duration // per job, in trace order
}

// driveJobs plays an orchestrator on gpufleet over both sims: at each
// arrival it takes the best idle node with Acquire, or grows the fleet by
// one and waits for a node; a finished job gives its node back with
// MarkIdle. The fleet has an IdleTimeout, so idle nodes are released by the
// Manager's cost rules. It returns the sims' bill once everything is gone.
func driveJobs(t *testing.T, req fleet.Requirements, jobs []workJob, pol fleet.Policy) driveResult {
	t.Helper()
	var res driveResult
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, pol)
		e.hot.SetVMLimit(1000)
		require.NoError(t, e.hot.SetQuantity("vm-mi300x-1", 1000))
		require.NoError(t, e.hot.SetQuantity("bm-mi300x-8", 1000))
		e.hot.SetBareMetalLimit(1000)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- e.m.Run(ctx) }()
		d := &driver{m: e.m, req: req, waits: make([]time.Duration, len(jobs)), grows: make(chan struct{}, 1)}
		require.NoError(t, e.m.Apply(t.Context(), fleet.Spec{Name: "w", Nodes: 0, IdleTimeout: time.Minute, Requirements: req}))
		start := time.Now()
		var wg sync.WaitGroup
		for i, j := range jobs {
			time.Sleep(time.Until(start.Add(j.Arrive)))
			wg.Go(func() { d.run(t, i, j) })
		}
		wg.Wait()
		require.NoError(t, e.m.Delete(t.Context(), "w"))
		for deadline := time.Now().Add(10 * time.Hour); len(e.m.Fleets()) > 0; time.Sleep(time.Minute) {
			require.True(t, time.Now().Before(deadline), "fleet not deleted")
		}
		time.Sleep(time.Hour)
		cancel()
		<-done
		e.assertNothingLeft()
		res = driveResult{Waits: d.waits}
		for _, c := range append(e.vultr.Ledger().Charges, e.hot.Ledger().Charges...) {
			res.BillUSD += c.USD
			res.Billed = append(res.Billed, c.Billed)
		}
	})
	return res
}

// driver is the orchestrator of driveJobs.
type driver struct {
	m       *fleet.Manager
	req     fleet.Requirements
	mu      sync.Mutex    // guards waits, running, waiting
	grows   chan struct{} // one grow at a time (a channel: a wait on it is durable in a synctest bubble)
	waits   []time.Duration
	running int // jobs on a node
	waiting int // jobs waiting for one
}

// run serves job i: it waits for a node, runs, and gives the node back.
func (d *driver) run(t *testing.T, i int, j workJob) {
	arrived := time.Now()
	d.count(0, 1)
	for {
		inst, err := d.m.Acquire(t.Context(), "w")
		if err == nil {
			d.mu.Lock()
			d.waits[i] = time.Since(arrived)
			d.mu.Unlock()
			d.count(1, -1)
			time.Sleep(j.Duration)
			require.NoError(t, d.m.MarkIdle(inst.ID))
			d.count(-1, 0)
			return
		}
		require.ErrorIs(t, err, fleet.ErrNoIdle)
		d.grow(t)
		time.Sleep(10 * time.Second)
	}
}

func (d *driver) count(running, waiting int) {
	d.mu.Lock()
	d.running += running
	d.waiting += waiting
	d.mu.Unlock()
}

// grow asks for a node per job running or waiting, when the fleet has fewer
// (the Manager lowers Nodes itself when it releases an idle node).
func (d *driver) grow(t *testing.T) {
	d.grows <- struct{}{}
	defer func() { <-d.grows }()
	d.mu.Lock()
	want := d.running + d.waiting
	d.mu.Unlock()
	for _, s := range d.m.Fleets() {
		if s.Name == "w" && s.Nodes < want {
			s.Nodes = want
			if err := d.m.Apply(t.Context(), s); err != nil && !errors.Is(err, fleet.ErrClosed) {
				require.NoError(t, err)
			}
		}
	}
}

// sortedJobs sorts jobs by arrival.
func sortedJobs(jobs []workJob) []workJob {
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].Arrive < jobs[b].Arrive })
	return jobs
}

func defaultPolicy() fleet.Policy { return fleet.Policy{} }
