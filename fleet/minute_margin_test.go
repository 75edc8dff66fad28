package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// While Hot Aisle is unsettled (a 10-minute outage from minute 12: its
// listings fail) an idle VM's forced release inside its 30-minute minimum
// starts at the minimum's end less HourlyReleaseMargin (20:00), not less
// MinuteReleaseMargin (29:00): the minimum is charged whole either way,
// and a second outage from 28:30 to 33:00 would refuse every delete from
// 29:00. Billed 30 min, $1.495 (tester AJ: 34 to 38 min).
func TestHotAisleReleaseStartsEarlyWhileTheProviderIsUnsettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, from, stop := runOneHotAisleVM(t, nil)
		time.Sleep(time.Until(from.Add(12 * time.Minute)))
		h.Outage(10 * time.Minute)
		time.Sleep(time.Until(from.Add(28*time.Minute + 30*time.Second)))
		h.Outage(4*time.Minute + 30*time.Second)
		c := stop()
		var failed int
		for _, call := range h.Calls() {
			if call.Fault && call.Time.Before(from.Add(28*time.Minute)) {
				failed++
			}
		}
		assert.False(t, c.Live, "still billing")
		assert.Equal(t, 30*time.Minute, c.Billed, "released %v after the start; %d calls failed in the first outage; $%.2f (%s)",
			c.To.Sub(c.From).Round(time.Second), failed, c.USD, c.Description)
	})
}

// Past its minimum a Hot Aisle VM bills every started minute, so a
// refused release is retried at the 30-second pace, not on the
// termination backoff (up to 5 min): an idle VM released (forced) at 29:00
// meets an outage from 28:30 to 45:00, retries stay at most a minute
// apart, and the delete lands within a minute of 45:00: 46 min billed,
// $2.29 (tester AJ: retries up to 4:58 apart, 47 to 50 min).
func TestHotAisleRetriesPastTheMinimumEveryHalfMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evs := make(chan fleet.Event, 1024)
		h, from, stop := runOneHotAisleVM(t, func(ev fleet.Event) {
			if ev.Type == fleet.EventTerminationRetry {
				evs <- ev
			}
		})
		time.Sleep(time.Until(from.Add(28*time.Minute + 30*time.Second)))
		h.Outage(16*time.Minute + 30*time.Second)
		c := stop()
		close(evs)
		var far []string
		for ev := range evs {
			if ev.Time.After(from.Add(30*time.Minute)) && ev.At.Sub(ev.Time) > time.Minute {
				far = append(far, fmt.Sprintf("%v->%v", ev.Time.Sub(from).Round(time.Second), ev.At.Sub(from).Round(time.Second)))
			}
		}
		assert.False(t, c.Live, "still billing")
		assert.Empty(t, far, "retries planned more than a minute ahead past the minimum (refused at -> next attempt, from the start)")
		assert.LessOrEqual(t, c.Billed, 46*time.Minute, "released %v after the start; $%.2f (%s)", c.To.Sub(c.From).Round(time.Second), c.USD, c.Description)
	})
}

// runOneHotAisleVM runs a Manager (Run, in the background) with a fleet of
// one idle Hot Aisle 1x VM on the sim, onEvent (may be nil) seeing its
// events; it returns the sim, the VM's billing start, and stop, which waits
// (up to 3 h from the start) until the VM stops billing, stops the Manager
// and returns its charge.
func runOneHotAisleVM(t *testing.T, onEvent func(fleet.Event)) (*sim.HotAisle, time.Time, func() sim.Charge) {
	t.Helper()
	h := sim.NewHotAisle()
	hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())))
	m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{hp}, Store: fleet.NewMemoryStore(), Owner: "hv", OnEvent: onEvent})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute, Requirements: hotType("vm-mi300x-1")}))
	for len(h.Ledger().Charges) == 0 {
		time.Sleep(time.Second)
	}
	from := h.Ledger().Charges[0].From
	return h, from, func() sim.Charge {
		for limit := from.Add(3 * time.Hour); time.Now().Before(limit) && h.Ledger().Charges[0].Live; {
			time.Sleep(10 * time.Second)
		}
		cancel()
		<-done
		m.Close()
		time.Sleep(time.Minute) // a VM DELETE blocks 20 s in the fake
		return h.Ledger().Charges[0]
	}
}
