package consumertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/internal/costopt"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/require"
)

// orchJob is one job of an orchestrator built from the docs: it needs one
// node of fleet from Arrive (an offset from the start) for Duration; a
// zero Duration is a job cancelled right after its node was handed out.
type orchJob struct {
	Fleet            string
	Arrive, Duration time.Duration
}

// orchestrator places jobs the way the docs say: Acquire the fleet's best idle
// node, and on ErrNoIdle grow the fleet (Nodes read back from Fleets) to a
// node per job running or waiting, looking again every 10 s; GiveBack when
// the job ends.
type orchestrator struct {
	m       *fleet.Manager
	mu      sync.Mutex
	want    map[string]int // jobs running or waiting, per fleet
	waits   []time.Duration
	runs    []string
	started []time.Duration
	start   time.Time
}

func (o *orchestrator) grow(ctx context.Context, t *testing.T, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.m.Fleets() {
		if s.Name == name && s.Nodes < o.want[name] {
			s.Nodes = o.want[name]
			require.NoError(t, o.m.Apply(ctx, s))
		}
	}
}

func (o *orchestrator) run(ctx context.Context, t *testing.T, i int, j orchJob) {
	arrived := time.Now()
	o.mu.Lock()
	o.want[j.Fleet]++
	o.mu.Unlock()
	var inst fleet.Instance
	for {
		var err error
		inst, err = o.m.Acquire(ctx, j.Fleet)
		if err == nil {
			break
		}
		require.ErrorIs(t, err, fleet.ErrNoIdle)
		o.grow(ctx, t, j.Fleet)
		time.Sleep(10 * time.Second)
	}
	o.mu.Lock()
	o.waits[i], o.runs[i], o.started[i] = time.Since(arrived), inst.ID, time.Since(o.start)
	o.mu.Unlock()
	time.Sleep(j.Duration)
	require.NoError(t, o.m.GiveBack(inst))
	o.mu.Lock()
	o.want[j.Fleet]--
	o.mu.Unlock()
}

// playJobs applies specs (Nodes 0 unless set), runs jobs, lets the Manager's
// idle rules release every node (tail: the orchestrator does not know the
// last job was the last), deletes the fleets and returns the orchestrator
// and the sims' charges. at runs f at offsets from the start.
func playJobs(t *testing.T, w *world, specs []fleet.Spec, jobs []orchJob, tail time.Duration, at map[time.Duration]func()) *orchestrator {
	t.Helper()
	ctx := t.Context()
	w.hot.SetVMLimit(100)
	w.hot.SetBareMetalLimit(100)
	require.NoError(t, w.hot.SetQuantity("vm-mi300x-1", 100))
	for _, s := range specs {
		require.NoError(t, w.m.Apply(ctx, s))
	}
	o := &orchestrator{m: w.m, want: map[string]int{}, waits: make([]time.Duration, len(jobs)),
		runs: make([]string, len(jobs)), started: make([]time.Duration, len(jobs)), start: time.Now()}
	var wg sync.WaitGroup
	for when, f := range at {
		wg.Go(func() { time.Sleep(time.Until(o.start.Add(when))); f() })
	}
	for i, j := range jobs {
		time.Sleep(time.Until(o.start.Add(j.Arrive)))
		wg.Go(func() { o.run(ctx, t, i, j) })
	}
	wg.Wait()
	time.Sleep(tail)
	for _, s := range specs {
		require.NoError(t, w.m.Delete(ctx, s.Name))
	}
	for deadline := time.Now().Add(12 * time.Hour); len(w.m.Fleets()) > 0; time.Sleep(time.Minute) {
		require.True(t, time.Now().Before(deadline), "fleets not deleted")
	}
	time.Sleep(time.Hour)
	w.assertNothingLeft(t)
	return o
}

// orchCharges are the sims' charges as spans from the orchestrator's start.
type orchCharge struct {
	sim.Charge
	From, To time.Duration
}

func orchCharges(w *world, start time.Time) []orchCharge {
	var out []orchCharge
	for _, c := range append(w.vultr.Ledger().Charges, w.hot.Ledger().Charges...) {
		out = append(out, orchCharge{c, c.From.Sub(start), c.To.Sub(start)})
	}
	return out
}

func orchTotal(cs []orchCharge) (usd float64) {
	for _, c := range cs {
		usd += c.USD
	}
	return usd
}

// orchOptimum is the least bill in USD for jobs (one kind), machines booting
// as fast as boot.
func orchOptimum(t *testing.T, b costopt.Billing, boot time.Duration, jobs []orchJob) float64 {
	t.Helper()
	tr := costopt.Trace{}
	for i, j := range jobs {
		tr.Jobs = append(tr.Jobs, costopt.Job{ID: i, Arrive: j.Arrive, Duration: max(j.Duration, time.Second)})
	}
	b.BootTime = boot
	opt, err := costopt.Optimum(tr, b)
	require.NoError(t, err)
	return opt.Plan.Bill()
}

func orchLog(t *testing.T, o *orchestrator, cs []orchCharge) {
	t.Helper()
	for _, c := range cs {
		t.Logf("charge %s %s %v..%v billed %v $%.2f", c.Plan, c.ResourceID, c.From.Round(time.Second), c.To.Round(time.Second), c.Billed, c.USD)
	}
	for i := range o.waits {
		t.Logf("job %d on %s started %v waited %v", i, o.runs[i], o.started[i].Round(time.Second), o.waits[i].Round(time.Second))
	}
}

// bareMetalWorld is newWorld with Hot Aisle's bare metal rented too.
func bareMetalWorld(t *testing.T, policy fleet.Policy) *world {
	t.Helper()
	w := &world{vultr: sim.NewVultr(), hot: sim.NewHotAisle()}
	providers := []fleet.Provider{
		vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(w.vultr.Client()))),
		hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(w.hot.Client())),
			hotaisle.WithBareMetal(true)),
	}
	m, err := fleet.NewManager(fleet.Config{Providers: providers, Policy: policy, Interval: 10 * time.Second,
		OnEvent: func(e fleet.Event) { w.mu.Lock(); w.events = append(w.events, e); w.mu.Unlock() }})
	require.NoError(t, err)
	w.m = m
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; m.Close() })
	return w
}
