package fleet_test

import (
	"context"
	"errors"
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

// neverUpAgent is an Agent that never comes up (sshd refuses for good: a bad
// image, a firewall).
type neverUpAgent struct{}

func (neverUpAgent) Start(context.Context, fleet.Instance) error {
	return errors.New("ssh: connect: connection refused")
}
func (neverUpAgent) Check(context.Context, fleet.Instance) error {
	return errors.New("ssh: connect: connection refused")
}

// With a long Config.Interval (20 minutes) and an agent that never comes
// up, Run still wakes at the agent deadline (and at its deferral to the end
// of a prepaid minimum), as the default Interval does (tester Z: Run slept
// past it; the Vultr server was deleted at 1:03:30, two hours billed, the
// Hot Aisle VM billed 34 minutes, the bare metal 484): Vultr MI300X bare
// metal (running 40 min after its create) billed one hour, a Hot Aisle VM
// its 30-minute minimum, Hot Aisle bare metal its 480 minutes.
func TestAgentDeadlineWakesTheLoop(t *testing.T) {
	for _, c := range []struct {
		name   string
		req    fleet.Requirements
		billed time.Duration
	}{
		{"vultr bare metal", vultrType(mi300x), time.Hour},
		{"hotaisle vm", hotType("vm-mi300x-1"), 30 * time.Minute},
		{"hotaisle bare metal", hotType("bm-mi300x-8"), 8 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				v, h := sim.NewVultr(), sim.NewHotAisle()
				vp := vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client())))
				hp := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())),
					hotaisle.WithBareMetal(true))
				m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{vp, hp}, Interval: 20 * time.Minute,
					Agent: neverUpAgent{}, Store: fleet.NewMemoryStore(), Owner: "tz"})
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- m.Run(ctx) }()
				require.NoError(t, m.Apply(ctx, fleet.Spec{Name: "f", Nodes: 1, Requirements: c.req}))
				var first sim.Charge
				for end := time.Now().Add(12 * time.Hour); time.Now().Before(end); time.Sleep(time.Minute) {
					if cs := servers(append(v.Ledger().Charges, h.Ledger().Charges...)); len(cs) > 0 && !cs[0].Live {
						first = cs[0]
						break
					}
				}
				require.NoError(t, m.Delete(ctx, "f"))
				for end := time.Now().Add(10 * time.Hour); len(m.Fleets()) > 0 && time.Now().Before(end); time.Sleep(time.Minute) {
				}
				cancel()
				<-done
				m.Close()
				require.False(t, first.From.IsZero(), "the first machine was never released")
				assert.Equal(t, c.billed, first.Billed, "the first machine (agent never up) released %v after its billing start (%s)",
					first.To.Sub(first.From).Round(time.Second), first.Description)
			})
		})
	}
}
