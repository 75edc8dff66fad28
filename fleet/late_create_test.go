package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var createLatency = 12 * time.Minute // past CreateTimeout + CreateLookupGrace (5 + 5 min)

const (
	vultrCreate = "POST /v2/instances"
	hotCreate   = "POST /api/teams/{team}/virtual_machines/"
)

// running starts Run in the background; the returned stop ends it.
func (e *env) running() (stop func()) {
	ctx, cancel := context.WithCancel(e.t.Context())
	done := make(chan error, 1)
	go func() { done <- e.m.Run(ctx) }()
	return func() { cancel(); <-done }
}

func (e *env) slowCreates(cloud string, d time.Duration, times int) {
	e.t.Helper()
	if cloud == "vultr" {
		require.NoError(e.t, e.vultr.Inject(sim.Fault{Route: vultrCreate, Latency: d, Times: times}))
	} else {
		require.NoError(e.t, e.hot.Inject(sim.Fault{Route: hotCreate, Latency: d, Times: times}))
	}
}

func reqOf(cloud string) fleet.Requirements {
	if cloud == "vultr" {
		return vultrVM("ewr")
	}
	return hotType("vm-mi300x-1")
}

func liveOf(e *env, cloud string) int {
	res := e.vultr.Resources()
	if cloud == "hotaisle" {
		res = e.hot.Resources()
	}
	n := 0
	for _, r := range res {
		if r.Live() && r.Kind != "vpc" && r.Kind != "ssh_key" {
			n++
		}
	}
	return n
}

// A create slower than CreateTimeout plus CreateLookupGrace lands after the
// Manager gave up on it and created another: the late one is found (by its
// label on Vultr; on Hot Aisle, where the label is a second call that never
// ran, as the one new unlabelled instance of its type) and released, so the
// fleet ends with one server, not two.
func TestCreateLandingAfterItWasGivenUpIsNotKeptTwice(t *testing.T) {
	bothClouds(t, func(t *testing.T, cloud string) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		e.slowCreates(cloud, createLatency, 1)
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, reqOf(cloud))))
		stop := e.running()
		time.Sleep(3 * time.Hour)
		stop()
		assert.Equal(t, 1, liveOf(e, cloud), "%+v", e.m.Instances("f"))
		require.NoError(t, e.m.Delete(t.Context(), "f"))
		require.True(t, e.runUntil(3*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		e.assertNothingLeft()
	})
}
