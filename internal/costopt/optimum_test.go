package costopt

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func optimum(t *testing.T, tr Trace, b Billing) Optimal {
	t.Helper()
	o, err := Optimum(tr, b)
	require.NoError(t, err)
	require.NoError(t, o.Check(tr))
	waits, err := o.JobWaits(tr)
	require.NoError(t, err)
	for _, w := range waits {
		require.Zero(t, w, "the optimum serves every job at its arrival")
	}
	return o
}

// TestOptimumHandComputed checks small traces whose optimum is clear.
func TestOptimumHandComputed(t *testing.T) {
	m, h := time.Minute, time.Hour
	job := func(id int, at, d time.Duration) Job { return Job{ID: id, Arrive: at, Duration: d} }
	cases := []struct {
		name     string
		b        Billing
		jobs     []Job
		units    int64
		machines int
	}{
		{"empty", VultrVM(), nil, 0, 0},
		{"one job, one started hour", VultrVM(), []Job{job(0, 0, 50*m)}, 1, 1},
		{"boot time is billed", VultrVM(), []Job{job(0, 0, 58*m)}, 2, 1},
		{"two short jobs share a paid hour", VultrVM(), []Job{job(0, 0, 20*m), job(1, 30*m, 20*m)}, 1, 1},
		{"overlapping jobs need two machines", VultrVM(), []Job{job(0, 0, 20*m), job(1, 10*m, 20*m)}, 2, 2},
		{"a long gap is cheaper as two machines", VultrVM(),
			[]Job{job(0, 0, 10*m), job(1, 5*h, 10*m)}, 2, 2},
		{"bare metal boots 40 min: keep it through a 30 min gap", VultrBareMetal(),
			[]Job{job(0, 0, 30*m), job(1, 60*m, 30*m)}, 3, 1}, // 2 h 10 alive, not 2 x 1 h 10
		{"Hot Aisle minimum holds three 8-minute jobs", HotAisleVM(),
			[]Job{job(0, 0, 8*m), job(1, 9*m, 8*m), job(2, 18*m, 8*m)}, 30, 1},
		{"Hot Aisle: idle after the minimum is billed per minute", HotAisleVM(),
			[]Job{job(0, 0, 25*m), job(1, 40*m, 10*m)}, 52, 1}, // created at -1.5 min, deleted at 50: 51.5 -> 52
		{"Hot Aisle bare metal: one machine for a day's jobs", HotAisleBareMetal(),
			[]Job{job(0, 0, h), job(1, 3*h, h), job(2, 6*h, h)}, 480, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := Trace{Jobs: c.jobs}
			o := optimum(t, tr, c.b)
			assert.Equal(t, c.units, o.Units())
			assert.Len(t, o.Machines, c.machines)
			assert.True(t, o.Proven)
			assert.InDelta(t, o.Bill(), o.LowerBound, 1e-9)
			assert.Zero(t, o.Gap())
		})
	}
}

// TestOptimumBruteForce compares the optimum with the cheapest of all
// partitions of the jobs into machines, on small traces of every kind.
func TestOptimumBruteForce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 7, 10, 13} {
		for _, b := range Kinds() {
			for seed := range uint64(12) {
				tr, err := Generate(benchWorkload(n), seed)
				require.NoError(t, err)
				o := optimum(t, tr, b)
				require.Equal(t, bruteForce(tr, b), o.Units(), "%d jobs, %s, seed %d", n, b.Name, seed)
				require.True(t, o.Proven)
			}
		}
	}
}

// TestOptimumBruteForceBursts does the same on dense bursts of short jobs,
// where machines are shared the most.
func TestOptimumBruteForceBursts(t *testing.T) {
	w := Workload{Jobs: 8, Horizon: 2 * time.Hour, MinDuration: 5 * time.Minute, MaxDuration: 40 * time.Minute,
		MeanBurst: 4, BurstGap: 3 * time.Minute}
	for _, b := range Kinds() {
		for seed := range uint64(25) {
			tr, err := Generate(w, seed)
			require.NoError(t, err)
			require.Equal(t, bruteForce(tr, b), optimum(t, tr, b).Units(), "%s, seed %d", b.Name, seed)
		}
	}
}

// TestOptimumBeatsEveryZeroWaitPolicy: with no boot time, every replayed
// policy serves each job at its arrival, so its plan is one the optimum
// considers and cannot be cheaper.
func TestOptimumBeatsEveryZeroWaitPolicy(t *testing.T) {
	rules := []Rules{DstackRules(), PaidWindowRules(), {Name: "keep 30 min", IdleTimeout: 30 * time.Minute}}
	for _, b := range Kinds() {
		b.BootTime = 0
		for seed := range uint64(10) {
			tr, err := Generate(DefaultWorkload(), seed)
			require.NoError(t, err)
			o := optimum(t, tr, b)
			require.True(t, o.Proven)
			for _, r := range rules {
				rp, err := Replay(tr, b, r)
				require.NoError(t, err)
				assert.LessOrEqual(t, o.Units(), rp.Units(), "%s, %s, seed %d", b.Name, r.Name, seed)
			}
		}
	}
}

// A plan whose jobs wait for a boot can bill below the optimum, which
// boots machines in advance (tester V): Vultr bare metal, boot 41 min; a
// job at 0 for a minute, another at 43 min for 5. Created at the first
// job's arrival, one machine serves both within its first hour; the
// optimum's machine, created 41 minutes before, needs a second hour. The
// optimum of Core(t, wait) is below every plan whose jobs wait at most
// wait: the replays create machines at arrival and make jobs wait a boot.
func TestCoreBoundsPlansThatWait(t *testing.T) {
	b := VultrBareMetal()
	b.BootTime = 41 * time.Minute
	tr := Trace{Jobs: []Job{{ID: 0, Arrive: 0, Duration: time.Minute}, {ID: 1, Arrive: 43 * time.Minute, Duration: 5 * time.Minute}}}
	assert.Equal(t, int64(2), optimum(t, tr, b).Units(), "no job waits")
	waited := Plan{Billing: b, Machines: []Machine{{Created: 0, Deleted: 48 * time.Minute,
		Runs: []Run{{Job: 0, Start: 41 * time.Minute}, {Job: 1, Start: 43 * time.Minute}}}}}
	assert.Equal(t, int64(1), waited.Units(), "the first job waits the boot")
	assert.LessOrEqual(t, optimum(t, Core(tr, 41*time.Minute), b).Units(), waited.Units())
	assert.Equal(t, tr, Core(tr, 0))
	for _, b := range Kinds() {
		for seed := range uint64(6) {
			tr, err := Generate(DefaultWorkload(), seed)
			require.NoError(t, err)
			for _, r := range []Rules{DstackRules(), PaidWindowRules(), {Name: "keep 30 min", IdleTimeout: 30 * time.Minute}} {
				rp, err := Replay(tr, b, r)
				require.NoError(t, err)
				lb := optimum(t, Core(tr, slices.Max(rp.Waits)), b)
				assert.LessOrEqual(t, lb.Units(), rp.Units(), "%s, %s, seed %d", b.Name, r.Name, seed)
			}
		}
	}
}

// TestOptimumDefaultWorkload solves the default workload exactly for every
// kind and a few seeds, deterministically.
func TestOptimumDefaultWorkload(t *testing.T) {
	for _, b := range Kinds() {
		for seed := range uint64(5) {
			tr, err := Generate(DefaultWorkload(), seed)
			require.NoError(t, err)
			o := optimum(t, tr, b)
			assert.True(t, o.Proven, "%s seed %d", b.Name, seed)
			again := optimum(t, tr, b)
			assert.Equal(t, o.Plan, again.Plan, "deterministic")
			assert.GreaterOrEqual(t, o.Nodes, 1)
			assert.Positive(t, o.Columns)
		}
	}
}

func TestOptimumRejectsBadInput(t *testing.T) {
	_, err := Optimum(Trace{Jobs: []Job{{ID: 1}}}, VultrVM())
	assert.Error(t, err, "zero duration")
	_, err = Optimum(twoJobs(), Billing{})
	assert.Error(t, err, "zero unit")
}

func ExampleOptimum() {
	m := time.Minute
	tr := Trace{Jobs: []Job{{ID: 1, Arrive: 0, Duration: 20 * m}, {ID: 2, Arrive: 30 * m, Duration: 20 * m}}}
	o, err := Optimum(tr, VultrVM())
	if err != nil {
		panic(err)
	}
	for _, mc := range o.Machines {
		fmt.Println("machine from", mc.Created, "to", mc.Deleted, "runs", mc.Runs)
	}
	fmt.Printf("bill %.3f USD, proven %v\n", o.Bill(), o.Proven)
	// Output:
	// machine from -2m30s to 50m0s runs [{1 0s} {2 30m0s}]
	// bill 2.397 USD, proven true
}

// TestBranchAndBoundBruteForce turns the dive off and starts from the worst
// incumbent (a machine per job), so that the search must branch wherever the
// linear relaxation is fractional, and compares with brute force; it also
// checks that such branching happened.
func TestBranchAndBoundBruteForce(t *testing.T) {
	branched := 0
	for _, n := range []int{12, 14} {
		for _, b := range Kinds() {
			for seed := range uint64(30) {
				tr, err := Generate(benchWorkload(n), seed)
				require.NoError(t, err)
				s := newSearch(tr.Jobs, b)
				s.diving = false
				s.best = singletons(len(tr.Jobs))
				s.bestUnits = s.units(s.best)
				lb, proven := s.run()
				require.True(t, proven)
				want := bruteForce(tr, b)
				require.Equal(t, want, s.bestUnits, "%d jobs, %s, seed %d", n, b.Name, seed)
				require.InDelta(t, float64(want), lb, 1e-9)
				require.NoError(t, s.plan().Check(tr))
				if s.nodes > 1 {
					branched++
				}
			}
		}
	}
	assert.Greater(t, branched, 5, "traces whose relaxation needed branching")
}

// TestNodeLimit stops the search after its root, without the dive and from
// the worst incumbent: the answer is then a feasible plan and a lower bound
// around the true optimum.
func TestNodeLimit(t *testing.T) {
	stopped := 0
	for _, n := range []int{12, 14} {
		for _, b := range Kinds() {
			for seed := range uint64(30) {
				tr, err := Generate(benchWorkload(n), seed)
				require.NoError(t, err)
				s := newSearch(tr.Jobs, b)
				s.diving, s.limit = false, 1
				s.best = singletons(len(tr.Jobs))
				s.bestUnits = s.units(s.best)
				lb, proven := s.run()
				want := float64(bruteForce(tr, b))
				require.LessOrEqual(t, lb, want+1e-9, "%s seed %d", b.Name, seed)
				require.GreaterOrEqual(t, float64(s.bestUnits), want)
				require.NoError(t, s.plan().Check(tr))
				if !proven {
					stopped++
					assert.Less(t, lb, float64(s.bestUnits))
				}
			}
		}
	}
	assert.Positive(t, stopped, "searches stopped unproven")
}

func singletons(n int) [][]int {
	out := make([][]int, n)
	for j := range out {
		out[j] = []int{j}
	}
	return out
}
