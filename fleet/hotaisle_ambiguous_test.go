package fleet_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTwoAmbiguousHotAisleCreatesLeak: a Hot Aisle VM fleet of 2;
// both creates take effect and answer 500 (after commit). Hot Aisle VMs
// carry no label at create, so each uncertain create is resolved by
// matching a new unlabelled VM of its type: two uncertain creates, two new
// VMs, both paired and labelled; nothing bills after the fleet is deleted.
func TestTwoAmbiguousHotAisleCreatesLeak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT8World(t, 0, fleet.NewMemoryStore(), fleet.Policy{})
		require.NoError(t, w.h.Inject(sim.Fault{Route: t8Clouds[1].createRoute, Times: 2, Status: 500, AfterCommit: true}))
		require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "amb", Nodes: 2, Requirements: t8Clouds[1].req}))
		time.Sleep(30 * time.Minute)
		w.waitGone(t, 3*time.Hour)
		w.stop()
		w.assertNoLeak(t)
		if t.Failed() {
			w.dumpEvents(t)
		}
	})
}

// TestAmbiguousCreatesOutnumberNewVMs: a Hot Aisle VM fleet of 2;
// one create takes effect and answers 500, the other answers 500 without
// taking effect. Both creates are uncertain and one new unlabelled VM
// appears: it is this fleet's (either create's; they are interchangeable)
// and is paired with the oldest; nothing bills after the fleet is deleted.
func TestAmbiguousCreatesOutnumberNewVMs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT8World(t, 0, fleet.NewMemoryStore(), fleet.Policy{})
		route := t8Clouds[1].createRoute
		require.NoError(t, w.h.Inject(sim.Fault{Route: route, Times: 1, Status: 500, AfterCommit: true}))
		require.NoError(t, w.h.Inject(sim.Fault{Route: route, Times: 1, Status: 500}))
		require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "amb", Nodes: 2, Requirements: t8Clouds[1].req}))
		time.Sleep(30 * time.Minute)
		w.waitGone(t, 3*time.Hour)
		w.stop()
		w.assertNoLeak(t)
		if t.Failed() {
			w.dumpEvents(t)
		}
	})
}

// TestSlowHotAisleCreatesOneVMTwoRecords: a Hot Aisle VM fleet of
// 3 whose provisions take 6 minutes to answer (longer than
// Policy.CreateTimeout, 5 min; the sim still creates the VM when the client
// has given up). The provider's own recovery of one create and the
// Manager's matching of another uncertain create could both take the same
// VM; a create answered with an instance another record holds is looked up
// as uncertain instead, so no VM has two records and the one the second
// provision really made is paired too. Both claims can happen at the same
// bubble instant, so the run is repeated 40 times.
func TestSlowHotAisleCreatesOneVMTwoRecords(t *testing.T) {
	for i := range 40 {
		t.Run(fmt.Sprint(i), slowHotAisleCreates)
	}
}

func slowHotAisleCreates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT8World(t, 0, fleet.NewMemoryStore(), fleet.Policy{})
		require.NoError(t, w.h.Inject(sim.Fault{Route: t8Clouds[1].createRoute, Latency: 6 * time.Minute}))
		require.NoError(t, w.m.Apply(t.Context(), fleet.Spec{Name: "slow", Nodes: 3, Requirements: t8Clouds[1].req}))
		time.Sleep(40 * time.Minute)
		ids := map[string]string{}
		for _, r := range w.m.Records() {
			if id := r.Instance.ID; id != "" && r.Instance.Status != fleet.StatusTerminated {
				assert.Empty(t, ids[id], "%s held by records %s and %s", id, ids[id], r.Instance.RequestID)
				ids[id] = r.Instance.RequestID
			}
		}
		w.waitGone(t, 3*time.Hour)
		w.stop()
		w.assertNoLeak(t)
		if t.Failed() {
			w.dumpEvents(t)
		}
	})
}
