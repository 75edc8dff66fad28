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
	// Machines are the sims' charges as spans from the start of the trace,
	// one per rental (a Hot Aisle bare-metal server rented again has one
	// per reservation, under the same ID); Runs say which machine ran each
	// job (trace order), by ID: the rental of that ID the job started in.
	Machines []machineSpan
	Runs     []string
}

// machineSpan is one rental of a machine: its ID and when it was created
// and released, from the start of the trace.
type machineSpan struct {
	ID       string
	From, To time.Duration
}

// driveJobs plays an orchestrator on gpufleet over both sims: jobs queue in
// arrival order; the head of the queue takes the best idle node with
// Acquire, or the fleet grows to one node per job running or waiting; a
// finished job gives its node back with GiveBack. The fleet has an
// IdleTimeout, so idle nodes are released by the Manager's cost rules. It
// returns the sims' bill once everything is gone.
func driveJobs(t *testing.T, req fleet.Requirements, jobs []workJob, pol fleet.Policy) driveResult {
	t.Helper()
	return driveWith(t, req, jobs, driveOpts{pol: pol})
}

// driveOpts vary driveJobs: with tail, the fleet is not deleted when the
// last job ends (an orchestrator does not know it was the last): the
// Manager's idle rules release every node, then the fleet is deleted; setup
// runs on the Manager once the fleet is applied; restarts are offsets from
// the start at which the Manager is closed and a new one built over the
// same Store (the orchestrator keeps its jobs and calls the new one); at
// runs hooks (an Apply of a changed spec) at offsets from the start.
type driveOpts struct {
	pol      fleet.Policy
	tail     bool
	setup    func(*fleet.Manager)
	restarts []time.Duration
	at       map[time.Duration]func(e *env) // called at these offsets from the start, no orchestrator call under way
}

func driveWith(t *testing.T, req fleet.Requirements, jobs []workJob, o driveOpts) driveResult {
	t.Helper()
	pol, tail := o.pol, o.tail
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
		d := newDriver(e.m, len(jobs))
		require.NoError(t, e.m.Apply(t.Context(), fleet.Spec{Name: "w", Nodes: 0, IdleTimeout: time.Minute, Requirements: req}))
		if o.setup != nil {
			o.setup(e.m)
		}
		start := time.Now()
		stop := make(chan struct{})
		dispatched := make(chan struct{})
		go func() { defer close(dispatched); d.dispatch(t, stop) }()
		restarted := make(chan struct{})
		go func() {
			defer close(restarted)
			for _, at := range o.restarts {
				time.Sleep(time.Until(start.Add(at)))
				d.use.Lock() // no call on the old Manager while it closes
				cancel()
				<-done
				e.m.Close()
				e.m = e.manager(e.store)
				d.m = e.m
				ctx, cancel = context.WithCancel(t.Context())
				done = make(chan error, 1)
				go func() { done <- e.m.Run(ctx) }()
				d.use.Unlock()
			}
		}()
		var hooks sync.WaitGroup
		for when, f := range o.at {
			hooks.Go(func() {
				time.Sleep(time.Until(start.Add(when)))
				d.use.Lock()
				f(e)
				d.use.Unlock()
			})
		}
		var wg sync.WaitGroup
		for i, j := range jobs {
			time.Sleep(time.Until(start.Add(j.Arrive)))
			wg.Go(func() { d.run(t, i, j) })
		}
		wg.Wait()
		hooks.Wait()
		<-restarted
		close(stop)
		<-dispatched
		for deadline := time.Now().Add(24 * time.Hour); tail && e.liveServers() > 0; time.Sleep(time.Minute) {
			require.True(t, time.Now().Before(deadline), "idle nodes not released")
		}
		require.NoError(t, e.m.Delete(t.Context(), "w"))
		for deadline := time.Now().Add(10 * time.Hour); len(e.m.Fleets()) > 0; time.Sleep(time.Minute) {
			require.True(t, time.Now().Before(deadline), "fleet not deleted")
		}
		time.Sleep(time.Hour)
		cancel()
		<-done
		e.assertNothingLeft()
		res = driveResult{Waits: d.waits, Runs: d.runs}
		for _, c := range append(e.vultr.Ledger().Charges, e.hot.Ledger().Charges...) {
			res.BillUSD += c.USD
			res.Billed = append(res.Billed, c.Billed)
			res.Machines = append(res.Machines, machineSpan{ID: c.ResourceID, From: c.From.Sub(start), To: c.To.Sub(start)})
		}
	})
	return res
}

// driver is the orchestrator of driveJobs: a queue of waiting jobs served
// in arrival order by one dispatcher.
type driver struct {
	use     sync.RWMutex // held (read) around calls to m: a restart swaps it under the write lock
	m       *fleet.Manager
	wake    chan struct{} // a job arrived or ended
	mu      sync.Mutex    // guards the fields below
	queue   []int         // jobs waiting, in arrival order
	give    []chan fleet.Instance
	waits   []time.Duration
	runs    []string // instance ID per job
	running int      // jobs on a node
}

func newDriver(m *fleet.Manager, n int) *driver {
	d := &driver{m: m, wake: make(chan struct{}, 1), give: make([]chan fleet.Instance, n),
		waits: make([]time.Duration, n), runs: make([]string, n)}
	for i := range d.give {
		d.give[i] = make(chan fleet.Instance, 1)
	}
	return d
}

// run serves job i: it queues for a node, runs, and gives the node back.
func (d *driver) run(t *testing.T, i int, j workJob) {
	arrived := time.Now()
	d.mu.Lock()
	d.queue = append(d.queue, i)
	d.mu.Unlock()
	d.poke()
	inst := <-d.give[i]
	d.mu.Lock()
	d.waits[i], d.runs[i] = time.Since(arrived), inst.ID
	d.mu.Unlock()
	time.Sleep(j.Duration)
	d.use.RLock()
	require.NoError(t, d.m.GiveBack(inst))
	d.use.RUnlock()
	d.mu.Lock()
	d.running--
	d.mu.Unlock()
	d.poke()
}

func (d *driver) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// dispatch hands idle nodes to the queue's head until stop, looking again
// whenever a job arrives or ends, and every 10 s while jobs wait.
func (d *driver) dispatch(t *testing.T, stop <-chan struct{}) {
	for {
		var tick <-chan time.Time
		if d.serve(t) {
			tick = time.After(10 * time.Second)
		}
		select {
		case <-stop:
			return
		case <-d.wake:
		case <-tick:
		}
	}
}

// serve gives idle nodes to waiting jobs in order; when none is idle it
// grows the fleet to a node per job running or waiting. It reports whether
// jobs still wait.
func (d *driver) serve(t *testing.T) bool {
	d.use.RLock()
	defer d.use.RUnlock()
	for {
		d.mu.Lock()
		waiting := len(d.queue)
		d.mu.Unlock()
		if waiting == 0 {
			return false
		}
		inst, err := d.m.Acquire(t.Context(), "w")
		if errors.Is(err, fleet.ErrNoIdle) {
			d.grow(t)
			return true
		}
		require.NoError(t, err)
		d.mu.Lock()
		i := d.queue[0]
		d.queue = d.queue[1:]
		d.running++
		d.mu.Unlock()
		d.give[i] <- inst
	}
}

// grow asks for a node per job running or waiting, when the fleet has fewer
// (the Manager lowers Nodes itself when it releases an idle node).
func (d *driver) grow(t *testing.T) {
	d.mu.Lock()
	want := d.running + len(d.queue)
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
