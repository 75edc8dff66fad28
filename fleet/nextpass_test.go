package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// selfDriven is one machine's life under a Manager that its caller drives
// with Reconcile (no Run), Config.Interval long: after each pass the caller
// waits until NextPass, or the whole interval when fixed is set (what the
// quickstart did, issue 17 A). A job (when job > 0) Acquires the node once
// ready, keeps it that long, and gives it back with MarkIdle followed by a
// pass at once. The re-buy hold is off: the minimum is the whole bill. It returns the sims' ledger charge of the machine once it
// is gone (or after horizon).
type selfDriven struct {
	req      fleet.Requirements
	interval time.Duration // Config.Interval
	fixed    bool          // wait the whole interval between passes
	job      time.Duration
	horizon  time.Duration
}

func (s selfDriven) play(t *testing.T) sim.Charge {
	t.Helper()
	var charge sim.Charge
	synctest.Test(t, func(t *testing.T) {
		v, h := sim.NewVultr(), sim.NewHotAisle()
		vp := vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client())))
		hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())),
			hotaisle.WithBareMetal(true))
		m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{vp, hp}, Interval: s.interval,
			Policy: fleet.Policy{RebuyHoldOff: true}, // no idle node kept past its minimum for a next job
			Store:  fleet.NewMemoryStore(), Owner: "tn"})
		require.NoError(t, err)
		defer m.Close()
		require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: "n", Nodes: 1, IdleTimeout: 5 * time.Minute, Requirements: s.req}))
		ledger := func() []sim.Charge { return append(v.Ledger().Charges, h.Ledger().Charges...) }
		var jobEnd time.Time
		var inst fleet.Instance
		for end := time.Now().Add(s.horizon); time.Now().Before(end); {
			require.NoError(t, m.Reconcile(t.Context()))
			if l := ledger(); len(l) == 1 && !l[0].Live {
				break
			}
			if s.job > 0 && jobEnd.IsZero() {
				if inst, err = m.Acquire(t.Context(), "n"); err == nil {
					jobEnd = time.Now().Add(s.job)
				}
			}
			wake := m.NextPass()
			if s.fixed {
				wake = time.Now().Add(s.interval)
			}
			if !jobEnd.IsZero() && inst.ID != "" && jobEnd.Before(wake) {
				time.Sleep(time.Until(jobEnd))
				require.NoError(t, m.MarkIdle(inst.ID))
				inst.ID = "" // the job is over; a pass at once
				continue
			}
			time.Sleep(time.Until(wake))
		}
		l := ledger()
		require.Len(t, l, 1)
		charge = l[0]
	})
	return charge
}

// Issue 17 A: a caller that drives the Manager with Reconcile at a long
// interval of its own, but calls it again by NextPass, gets every release
// at its last safe moment: a Vultr VM and bare-metal server within their
// first hour, a Hot Aisle VM (30-minute minimum) and bare-metal server
// (480-minute minimum) at their minimum's end, whether the node was used
// (a 10-minute job) or never. The same caller waiting its whole interval
// (45 minutes) between passes misses the release of a node never used and
// buys another hour, or minutes past the minimum.
func TestNextPassReleasesAtTheLastSafeMoment(t *testing.T) {
	for _, c := range []struct {
		name    string
		req     fleet.Requirements
		billed  time.Duration
		horizon time.Duration
	}{
		{"vultr vm", vultrType("vcg-a100-12c-120g-80vram"), time.Hour, 4 * time.Hour},
		{"vultr bare metal", fleet.Requirements{Providers: []string{"vultr"}, InstanceTypes: []string{"vbm-24c-256gb-amd"}, Regions: []string{"ewr"}},
			time.Hour, 4 * time.Hour},
		{"hotaisle vm", hotType("vm-mi300x-1"), 30 * time.Minute, 4 * time.Hour},
		{"hotaisle bare metal", hotType("bm-mi300x-8"), 480 * time.Minute, 12 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, job := range []time.Duration{0, 10 * time.Minute} {
				got := selfDriven{req: c.req, interval: 45 * time.Minute, job: job, horizon: c.horizon}.play(t)
				fixed := selfDriven{req: c.req, interval: 45 * time.Minute, fixed: true, job: job, horizon: c.horizon}.play(t)
				t.Logf("job %v: billed %v by NextPass, %v by a fixed 45-minute interval", job, got.Billed, fixed.Billed)
				assert.False(t, got.Live, "job %v: still billing", job)
				assert.Equal(t, c.billed, got.Billed, "job %v: %s", job, got.Description)
				if job == 0 {
					assert.Greater(t, fixed.Billed, c.billed, "a fixed interval misses the release of a node never used")
				}
			}
		})
	}
}

// NextPass may be asked while Run steps (no data race), and always answers
// between a second and Config.Interval from now.
func TestNextPassWhileRunIsWithinItsBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- e.m.Run(ctx) }()
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 2, hotType("vm-mi300x-1"))))
		require.NoError(t, e.m.Apply(t.Context(), spec("g", 1, vultrVM("ewr"))))
		early := 0
		for end := time.Now().Add(time.Hour); time.Now().Before(end); time.Sleep(3 * time.Second) {
			next := e.m.NextPass().Sub(time.Now())
			require.GreaterOrEqual(t, next, time.Second)
			require.LessOrEqual(t, next, 10*time.Second, "Config.Interval (default 10 s)")
			if next < 10*time.Second {
				early++
			}
		}
		t.Logf("%d of 1200 answers before the interval's end", early)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
}
