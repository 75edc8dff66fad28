package fleet_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// powerAgent is a test agent that cannot be reached on a machine the test
// says is down (halted, or booting again): Start and Check fail there.
type powerAgent struct {
	mu   sync.Mutex
	down map[string]bool // provider id → unreachable
}

var errUnreachable = errors.New("ssh: connection refused")

func (a *powerAgent) Start(_ context.Context, inst fleet.Instance) error { return a.reach(inst.ID) }
func (a *powerAgent) Check(_ context.Context, inst fleet.Instance) error { return a.reach(inst.ID) }

func (a *powerAgent) reach(id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.down[id] {
		return errUnreachable
	}
	return nil
}

func (a *powerAgent) set(id string, down bool) {
	a.mu.Lock()
	a.down[id] = down
	a.mu.Unlock()
}

// restartIdle is one node's life through a halt out of band and a restart
// (Policy.OnStopped = OnStoppedRestart), every time counted from the
// start of its billing: a job (when jobEnd > 0) from ready to jobEnd, the
// halt at halt, the agent reachable again at up (the machine booted
// again). The re-buy hold is off. It returns the ledger's charge once the
// machine is gone (or after horizon) and the node's first ready time
// (from the start of its billing). A job under way at the halt (busyAtHalt)
// dies with the machine.
type restartIdle struct {
	req              fleet.Requirements
	idle             time.Duration // Spec.IdleTimeout
	jobEnd, halt, up time.Duration
	horizon          time.Duration
	agentTimeout     time.Duration // Policy.AgentTimeout (0: default, 15 min)
	busyAtHalt       bool          // the job runs until the halt (it dies with it; no MarkIdle)
}

func (s restartIdle) play(t *testing.T) (c sim.Charge, ready time.Duration) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OnStopped: fleet.OnStoppedRestart, RebuyHoldOff: true, AgentTimeout: s.agentTimeout})
		agent := &powerAgent{down: map[string]bool{}}
		e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: testOwner, Agent: agent})
		require.NoError(t, e.m.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: s.idle, Requirements: s.req}))
		require.True(t, e.runUntil(2*time.Hour, func() bool { return e.only("f").Status == fleet.StatusIdle }))
		ledger := func() sim.Charge {
			l := append(e.vultr.Ledger().Charges, e.hot.Ledger().Charges...)
			require.Len(t, l, 1)
			return l[0]
		}
		from := ledger().From
		ready = e.only("f").Ready.Sub(from)
		at := func(d time.Duration) { // reconcile every 10 s until d after the billing start
			if left := time.Until(from.Add(d)); left > 0 {
				e.run(left)
			}
		}
		id := e.only("f").ID
		if s.jobEnd > 0 || s.busyAtHalt {
			inst, err := e.m.Acquire(t.Context(), "f")
			require.NoError(t, err)
			if !s.busyAtHalt {
				at(s.jobEnd)
				require.NoError(t, e.m.MarkIdle(inst.ID))
			}
		}
		at(s.halt)
		require.True(t, ledger().Live, "released before the halt")
		agent.set(id, true)
		if s.req.Providers[0] == fleet.ProviderVultr {
			require.NoError(t, e.vultr.HaltOutOfBand(id))
		} else {
			require.NoError(t, e.hot.HaltOutOfBand(id))
		}
		at(s.up)
		agent.set(id, false)
		for end := time.Now().Add(s.horizon); time.Now().Before(end) && ledger().Live; {
			e.run(time.Minute)
		}
		stops := e.eventsOf(fleet.EventInstanceStopped)
		require.NotEmpty(t, stops, "the halt was seen")
		t.Logf("ready %v, halted %v, restarted %v, agent up %v after the billing start",
			ready, s.halt, stops[0].Time.Sub(from).Round(time.Second), s.up)
		assert.Zero(t, e.count(fleet.EventDeadlineMissed), "restarted within its agent deadline")
		c = ledger()
	})
	return c, ready
}

// Issue 17 B: a node whose job ended inside its minimum reservation, then
// halted out of band and restarted, was counted as never used once ready
// again: its IdleTimeout (30 minutes) ran from then, past the minimum (a
// Hot Aisle VM billed 55 minutes instead of 30, bare metal 541 instead of
// 480). It must still go by the minimum's end (less a minute: the minimum
// is billed whole), also when it is still booting again then (the agent
// unreachable until past the minimum's end), and when its job was under
// way at the halt (the job ended with it). On Vultr the same node must go
// before its first hour ends, also while booting again then.
func TestRestartedIdleNodeReleasedByItsMinimum(t *testing.T) {
	vultrBM := fleet.Requirements{Providers: []string{"vultr"}, InstanceTypes: []string{"vbm-24c-256gb-amd"}, Regions: []string{"ewr"}}
	for _, c := range []struct {
		name   string
		s      restartIdle
		billed time.Duration
	}{
		{"hotaisle vm, up again before the minimum's end",
			restartIdle{req: hotType("vm-mi300x-1"), idle: 30 * time.Minute, jobEnd: 10 * time.Minute, halt: 14 * time.Minute, up: 22 * time.Minute},
			30 * time.Minute},
		{"hotaisle vm, booting again at the minimum's end",
			restartIdle{req: hotType("vm-mi300x-1"), idle: 30 * time.Minute, jobEnd: 10 * time.Minute, halt: 24 * time.Minute, up: 36 * time.Minute},
			30 * time.Minute},
		{"hotaisle bare metal, up again before the minimum's end",
			restartIdle{req: hotType("bm-mi300x-8"), idle: 60 * time.Minute, jobEnd: 2 * time.Hour, halt: 430 * time.Minute, up: 440 * time.Minute},
			480 * time.Minute},
		{"hotaisle bare metal, booting again at the minimum's end",
			restartIdle{req: hotType("bm-mi300x-8"), idle: 60 * time.Minute, jobEnd: 2 * time.Hour, halt: 470 * time.Minute, up: 485 * time.Minute},
			480 * time.Minute},
		{"hotaisle vm, busy at the halt",
			restartIdle{req: hotType("vm-mi300x-1"), idle: 30 * time.Minute, busyAtHalt: true, halt: 14 * time.Minute, up: 20 * time.Minute},
			30 * time.Minute},
		{"vultr vm, booting again at the hour's last safe moment",
			restartIdle{req: vultrVM("ewr"), idle: 30 * time.Minute, jobEnd: 20 * time.Minute, halt: 44 * time.Minute, up: 61 * time.Minute},
			time.Hour},
		{"vultr bare metal, booting again at the hour's last safe moment",
			restartIdle{req: vultrBM, idle: 30 * time.Minute, jobEnd: 43 * time.Minute, halt: 45 * time.Minute, up: 62 * time.Minute,
				agentTimeout: 30 * time.Minute},
			time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.s.horizon = 10 * time.Hour
			got, _ := c.s.play(t)
			t.Logf("billed %v (%s)", got.Billed, got.Description)
			assert.False(t, got.Live, "still billing")
			assert.Equal(t, c.billed, got.Billed, got.Description)
		})
	}
}

// A node never used keeps its idle clock across the restart: it is
// released IdleTimeout after it first went idle (the minimum's end when
// later), not IdleTimeout after it was ready again.
func TestRestartedNeverUsedNodeKeepsItsIdleClock(t *testing.T) {
	s := restartIdle{req: hotType("vm-mi300x-1"), idle: 30 * time.Minute, halt: 10 * time.Minute, up: 18 * time.Minute, horizon: 10 * time.Hour}
	got, ready := s.play(t)
	want := (ready + s.idle + time.Minute - 1).Truncate(time.Minute)
	t.Logf("ready %v after the billing start; billed %v (%s)", ready, got.Billed, got.Description)
	assert.False(t, got.Live, "still billing")
	assert.GreaterOrEqual(t, got.Billed, want)
	assert.LessOrEqual(t, got.Billed, want+time.Minute, "released IdleTimeout after it first went idle")
}
