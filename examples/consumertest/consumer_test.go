package consumertest

import (
	"context"
	"errors"
	"net/http"
	"sync"
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

// runBatch stands for the orchestrator's own code under test: rent a
// fleet, run one batch of work on it, give it back, and return only when
// the Manager says every machine is confirmed gone. It uses plain
// time.Sleep: inside a synctest bubble that is the bubble's clock.
func runBatch(ctx context.Context, m *fleet.Manager, spec fleet.Spec, work time.Duration) error {
	if err := m.Apply(ctx, spec); err != nil {
		return err
	}
	var ids []string
	for len(ids) < spec.Nodes {
		time.Sleep(10 * time.Second)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ids = ids[:0]
		for _, i := range m.Instances(spec.Name) {
			if i.Status == fleet.StatusIdle {
				ids = append(ids, i.ID)
			}
		}
	}
	nodes := make([]fleet.Instance, len(ids))
	for i := range ids { // the job takes every node; Acquire hands out the most paid time left first
		inst, err := m.Acquire(ctx, spec.Name)
		if err != nil {
			return err
		}
		nodes[i] = inst
	}
	time.Sleep(work)
	for _, inst := range nodes { // GiveBack: only while the hand-out is still the node's
		if err := m.GiveBack(inst); err != nil {
			return err
		}
	}
	if err := m.Delete(ctx, spec.Name); err != nil {
		return err
	}
	for len(m.Fleets()) > 0 {
		time.Sleep(10 * time.Second)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// world is a Manager over both fakes, reconciling every 10 s of bubble
// time in the background. Build it inside the bubble.
type world struct {
	vultr  *sim.Vultr
	hot    *sim.HotAisle
	m      *fleet.Manager
	mu     sync.Mutex
	events []fleet.Event
}

func newWorld(t *testing.T, policy fleet.Policy) *world {
	t.Helper()
	w := &world{vultr: sim.NewVultr(), hot: sim.NewHotAisle()} // clock: the bubble's
	providers := []fleet.Provider{
		vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(w.vultr.Client()))),
		hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(w.hot.Client()))),
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

// assertNothingLeft checks the fakes' whole inventories: every kind of
// resource they hold (servers, VMs, bare metal, VPCs, SSH keys) must be
// gone. It returns the kinds it saw, so a test can check that it looked at
// what it meant to.
func (w *world) assertNothingLeft(t *testing.T) map[string]bool {
	t.Helper()
	kinds := map[string]bool{}
	for _, r := range append(w.vultr.Resources(), w.hot.Resources()...) {
		kinds[r.Kind] = true
		assert.False(t, r.Live(), "%s %s (%s) left behind", r.Kind, r.ID, r.Plan)
	}
	return kinds
}

// authorizedKey is an SSH key a fleet installs on its machines: Hot Aisle
// registers it on the account, where it must not outlive the fleet.
const authorizedKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKL6L0o1W6LpB6UwCenjfK3fesfmagi6B2MfVTBys/JM consumer@test"

func (w *world) count(typ fleet.EventType) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// TestBatchOnVultrOutlastsALongLock: the orchestrator releases at once when
// its work is done, and Vultr keeps the fresh server locked for 15 minutes.
// The batch must still end with the server gone and one hour billed.
func TestBatchOnVultrOutlastsALongLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, fleet.Policy{Release: fleet.ReleaseNow})
		w.vultr.LockWindow(15 * time.Minute) // the fault
		spec := fleet.Spec{Name: "batch", Nodes: 1, SSHKeys: []string{authorizedKey}, Requirements: fleet.Requirements{
			Providers: []string{fleet.ProviderVultr}, InstanceTypes: []string{"vc2-1c-1gb"}, Regions: []string{"ewr"}}}

		require.NoError(t, runBatch(t.Context(), w.m, spec, time.Minute))

		w.assertNothingLeft(t)
		locked := 0
		for _, c := range w.vultr.Calls() {
			if c.Route == "DELETE /v2/instances/{id}" && c.Status == http.StatusInternalServerError {
				locked++
			}
		}
		assert.Positive(t, locked, "the release met the lock and was retried")
		ledger := w.vultr.Ledger()
		require.Len(t, ledger.Charges, 1)
		assert.Equal(t, time.Hour, ledger.Charges[0].Billed, "released inside the first paid hour")

		time.Sleep(3 * time.Hour) // advance: nothing may keep billing
		assert.Equal(t, ledger.TotalUSD, w.vultr.Ledger().TotalUSD)
	})
}

// TestBatchOnHotAisleRidesOutAnOutage: Hot Aisle is unreachable for 20
// minutes just before the VMs' 30-minute minimum reservation ends. The
// release waits for the minimum (paid anyway), meets the outage, keeps
// retrying, and the bill stays under the first hour.
func TestBatchOnHotAisleRidesOutAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, fleet.Policy{})
		spec := fleet.Spec{Name: "infer", Nodes: 2, SSHKeys: []string{authorizedKey}, Requirements: fleet.Requirements{
			Providers: []string{fleet.ProviderHotAisle}, GPUModel: "MI300X", GPUCount: 1}}
		errc := make(chan error, 1)
		go func() { errc <- runBatch(t.Context(), w.m, spec, 10*time.Minute) }()

		time.Sleep(25 * time.Minute)
		w.hot.Outage(20 * time.Minute) // the fault
		var err error
		select {
		case err = <-errc:
		case <-time.After(3 * time.Hour):
			err = errors.New("the batch did not end within 3 hours")
		}
		require.NoError(t, err)

		kinds := w.assertNothingLeft(t) // fails while the Manager leaves the fleet's SSH key on the account
		assert.True(t, kinds["ssh_key"] && kinds["virtual_machine"], "the check saw the VMs and the SSH key: %v", kinds)
		assert.Positive(t, w.count(fleet.EventProviderUnavailable)+w.count(fleet.EventTerminationRetry), "the outage was met")
		assert.Zero(t, w.count(fleet.EventReleaseForced), "nothing was forced: the minimum was waited for")
		ledger := w.hot.Ledger()
		require.Len(t, ledger.Charges, 2)
		for _, c := range ledger.Charges {
			assert.GreaterOrEqual(t, c.Billed, 30*time.Minute, "never below the minimum reservation")
			assert.Less(t, c.Billed, time.Hour, "released soon after the outage")
		}
		assert.Less(t, ledger.TotalUSD, 2*2.99)
	})
}
