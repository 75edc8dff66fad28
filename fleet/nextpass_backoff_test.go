package fleet_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// passClock is the process clock counting Run's pauses: one per pass.
type passClock struct{ sleeps *atomic.Int64 }

func (passClock) Now() time.Time { return time.Now() }

func (c passClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeps.Add(1)
	return fleet.RealClock().Sleep(ctx, d)
}

// vultrPasses counts the loop's passes over 3 hours for one Vultr VM fleet
// under a Manager with Interval, bare-metal listing refused (403) or not,
// paced by NextPass (Reconcile) or by Run.
func vultrPasses(t *testing.T, refused, run bool, interval time.Duration) (passes int, calls int) {
	v := sim.NewVultr()
	if refused {
		require.NoError(t, v.Inject(sim.Fault{Route: vultrMetalList, Status: 403, Message: "You do not have permission to access bare metal."}))
	}
	vp := vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client())))
	var sleeps atomic.Int64
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{vp}, Store: fleet.NewMemoryStore(), Owner: "ak",
		Interval: interval, Clock: passClock{&sleeps}})
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Apply(t.Context(), spec("web", 1, vultrVM("ewr"))))
	start := time.Now()
	if run {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		time.Sleep(3 * time.Hour)
		cancel()
		<-done
		return int(sleeps.Load()), len(v.Calls())
	}
	for time.Since(start) < 3*time.Hour {
		require.NoError(t, m.Reconcile(t.Context()))
		passes++
		time.Sleep(time.Until(m.NextPass()))
	}
	return passes, len(v.Calls())
}

// A Vultr key without bare-metal access (/v2/bare-metals answers 403 for
// good): the loop waits out the bare-metal listing's backoff instead of
// reporting the rescan after start, which cannot list before it, as due.
// One VM fleet over 3 h makes about as many passes as without the
// refusal, paced by NextPass (Interval 1 h, ExampleManager_NextPass) or by
// Run (Interval 1 h and the default 10 s). Tester AK: 10,475 passes in 3 h,
// 10,471 of them a second or less apart, with NextPass (22 without the
// refusal), and Run spinning the same way, before.
func TestNextPassWaitsOutARefusedBareMetalListingsBackoff(t *testing.T) {
	for _, c := range []struct {
		name     string
		run      bool
		interval time.Duration
	}{{"NextPass", false, time.Hour}, {"Run", true, time.Hour}, {"Run10s", true, 0}, {"NextPass1m", false, time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clean, cleanCalls := vultrPasses(t, false, c.run, c.interval)
				refused, refusedCalls := vultrPasses(t, true, c.run, c.interval)
				t.Logf("passes in 3 h: %d with bare-metal listing refused (%d calls), %d without (%d calls)", refused, refusedCalls, clean, cleanCalls)
				assert.LessOrEqual(t, refused, 2*clean+2, "within 2x of the run without the refusal")
			})
		})
	}
}
