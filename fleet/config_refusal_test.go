package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
)

// newManagerSafely calls NewManager and turns a panic into an error.
func newManagerSafely(cfg fleet.Config) (m *fleet.Manager, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fleet.NewManager(cfg)
}

// ptrClock is a Clock whose methods need a non-nil receiver.
type ptrClock struct{ at time.Time }

func (c *ptrClock) Now() time.Time                                   { return c.at }
func (c *ptrClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// NewManager refuses a Config that cannot work with ErrInvalidConfig, and
// it already treats a nil pointer in an interface field as nil for
// Providers and Agent. A nil *MemoryStore (a store whose constructor was
// forgotten: var s *fleet.MemoryStore) or a nil pointer Clock is a Config
// that cannot work either; NewManager panics on both instead of answering
// ErrInvalidConfig (or taking the default, as for a nil interface).
// (tester AZ: before the fix, NewManager panicked on all three.)
func TestNewManagerTypedNilStoreAndClock(t *testing.T) {
	hs := sim.NewHotAisle()
	hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(hs.Client())))
	for name, cfg := range map[string]fleet.Config{
		"nil *MemoryStore":      {Store: (*fleet.MemoryStore)(nil)},
		"nil *MemoryLeaseStore": {Store: (*fleet.MemoryLeaseStore)(nil), Owner: "t1", ReplicaID: "r1"},
		"nil pointer Clock":     {Clock: (*ptrClock)(nil)},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.Providers = []fleet.Provider{hp}
			m, err := newManagerSafely(cfg)
			if m != nil {
				m.Close()
			}
			t.Logf("NewManager: %v", err)
			if err != nil && errors.Is(err, fleet.ErrInvalidConfig) {
				return
			}
			assert.NoError(t, err, "neither ErrInvalidConfig nor a working Manager")
		})
	}
}

// The margin bounds (spec.go: "A margin that long would release a node
// before it had used half of what it paid") check HourlyReleaseMargin
// against half a Vultr hour only. But while Hot Aisle is troubled (one
// failed listing) its per-minute nodes are released HourlyReleaseMargin
// before their minimum ends (minuteMargin), and NewManager accepts 25 min:
// a 30-minute Hot Aisle VM whose job ended at 3 min was released at
// 5 min, having used a sixth of what it paid. The troubled margin before a
// minimum's end is now at most 15 minutes (half the shortest minimum): the
// VM is kept to 15 min, and a job at 14 min finds it.
// (tester AZ: before the fix, the VM went at 5 min and a job at 16 min
// bought a second minimum.)
func TestHourlyMarginCutsHotAisleMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{HourlyReleaseMargin: 25 * time.Minute, RebuyHoldOff: true})
		stop := e.running()
		defer func() { stop(); time.Sleep(time.Minute) }()
		s := spec("f", 1, hotType("vm-mi300x-1"))
		s.IdleTimeout = time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		var a fleet.Instance
		for limit := time.Now().Add(time.Hour); a.ID == ""; time.Sleep(5 * time.Second) {
			require.True(t, time.Now().Before(limit), "A not ready")
			a, _ = e.m.Acquire(t.Context(), "f")
		}
		time.Sleep(time.Until(a.Created.Add(3 * time.Minute)))
		require.NoError(t, e.m.GiveBack(a))
		require.NoError(t, e.hot.Inject(sim.Fault{Route: "GET /api/teams/{team}/virtual_machines/", Status: 503, Duration: 10 * time.Minute}))
		time.Sleep(time.Until(a.Created.Add(14 * time.Minute)))
		got, err := e.m.Acquire(t.Context(), "f")
		var used time.Duration
		for _, ch := range servers(e.hot.Ledger().Charges) {
			if ch.ResourceID == a.ID {
				if !ch.Live {
					used = ch.To.Sub(ch.From)
				}
				t.Logf("A: %s", ch.Description)
			}
		}
		t.Logf("A released after %v of its 30-min minimum; the job at 14 min: Acquire %q %v", used.Round(time.Second), got.ID, err)
		assert.NoError(t, err, "the job at 14 min finds no node (it buys a new 30-min minimum)")
		assert.Equal(t, a.ID, got.ID, "the job at 14 min gets A")
		assert.Zero(t, used, "released after %v, under half its minimum", used)
	})
}
