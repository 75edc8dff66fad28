package fleet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/require"
)

// serverCharge is the ledger charge of server id on either sim.
func serverCharge(e *env, id string) sim.Charge {
	e.t.Helper()
	for _, c := range append(e.vultr.Ledger().Charges, e.hot.Ledger().Charges...) {
		if c.ResourceID == id {
			return c
		}
	}
	e.t.Fatalf("no charge for %s", id)
	return sim.Charge{}
}

// waitChargeEnds sleeps (Run in the background) until server id stops billing
// or limit passes, and returns its charge.
func waitChargeEnds(e *env, id string, limit time.Duration) sim.Charge {
	e.t.Helper()
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(10 * time.Second) {
		if c := serverCharge(e, id); !c.Live {
			time.Sleep(time.Minute) // the fake's delete call ends (a Hot Aisle VM reset takes ~20 s)
			return c
		}
	}
	return serverCharge(e, id)
}

// acquireWithin waits (Run in the background) until Acquire hands out a node
// of fleet name.
func acquireWithin(t *testing.T, e *env, name string, limit time.Duration) fleet.Instance {
	t.Helper()
	for end := time.Now().Add(limit); ; time.Sleep(10 * time.Second) {
		x, err := e.m.Acquire(t.Context(), name)
		if err == nil {
			return x
		}
		require.ErrorIs(t, err, fleet.ErrNoIdle)
		require.True(t, time.Now().Before(end), "fleet %s: no node handed out in %v", name, limit)
	}
}

// acquirePolling asks fleet name for a node every 10 s while none is idle
// (ErrNoIdle), as a job waiting for a node does, and returns the node or
// any other error; it does not fail the test, so that a job's goroutine
// can use it.
func acquirePolling(ctx context.Context, e *env, name string) (fleet.Instance, error) {
	for {
		x, err := e.m.Acquire(ctx, name)
		if !errors.Is(err, fleet.ErrNoIdle) {
			return x, err
		}
		time.Sleep(10 * time.Second)
	}
}

// jobThenIdle runs one job on the node Acquire hands out of fleet name,
// from now to jobEnd after the node's billing start, gives it back, and
// sleeps to at after that start. It returns the node and its billing start.
func jobThenIdle(t *testing.T, e *env, name string, jobEnd, at time.Duration) (fleet.Instance, time.Time) {
	t.Helper()
	x, err := e.m.Acquire(t.Context(), name)
	require.NoError(t, err)
	from := serverCharge(e, x.ID).From
	time.Sleep(time.Until(from.Add(jobEnd)))
	require.NoError(t, e.m.GiveBack(x))
	time.Sleep(time.Until(from.Add(at)))
	return x, from
}

// oneNodeAfterJob applies fleet "a" of one node of req (IdleTimeout idle)
// on a new env under pol, runs the Manager, runs one job on the node from
// ready to jobEnd after its billing start (jobThenIdle) and returns at at
// after that start with the env, the node, its billing start and the
// running loop's stop.
func oneNodeAfterJob(t *testing.T, pol fleet.Policy, req fleet.Requirements, idle, jobEnd, at time.Duration, simOpts ...sim.Option) (*env, fleet.Instance, time.Time, func()) {
	t.Helper()
	e := newEnv(t, pol, simOpts...)
	e.idleFleet("a", 1, idle, req)
	stop := e.running()
	x, from := jobThenIdle(t, e, "a", jobEnd, at)
	return e, x, from, stop
}
