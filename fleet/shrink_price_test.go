package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two Vultr GPU plans sold in the same regions, both billed by the hour.
const (
	cheapVultr = "vcg-l40s-16c-180g-48vram" // $1.68 an hour
	dearVultr  = "vcg-a100-12c-120g-80vram" // $2.397 an hour
)

// mixedFleet builds fleet "f" of two idle nodes of different plans: one of
// plan first (the older), then one of plan second; both kept idle (no
// IdleTimeout). It then applies the fleet with nodes and requirements r that
// admit both plans, and returns the first node and the second.
func (e *env) mixedFleet(first, second string, typ func(...string) fleet.Requirements, nodes int) (older, newer fleet.Instance) {
	e.t.Helper()
	older = e.idleFleet("f", 1, 0, typ(first))[0]
	for _, in := range e.idleFleet("f", 2, 0, typ(second)) {
		if in.RequestID != older.RequestID {
			newer = in
		}
	}
	require.Equal(e.t, second, newer.Offer.InstanceType)
	require.NoError(e.t, e.m.Apply(e.t.Context(), spec("f", nodes, typ(first, second))))
	return older, newer
}

// statusOf is the status of the fleet's node with request id id.
func (e *env) statusOf(id string) fleet.Status {
	e.t.Helper()
	for _, in := range e.m.Instances("f") {
		if in.RequestID == id {
			return in.Status
		}
	}
	e.t.Fatalf("no node %s", id)
	return ""
}

// A fleet of a cheap Vultr node (the older: the less paid time left) and a
// dear one scales down to one. Keeping either costs its next hour (Vultr
// bills started hours): $1.68 for the cheap one, $2.397 for the dear one.
// The dear one goes; before keepCost, the one with the least paid time left
// (the cheap one) went and the fleet kept paying $0.717 an hour more.
func TestScaleDownReleasesTheNodeDearestToKeep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		cheap, dear := e.mixedFleet(cheapVultr, dearVultr, vultrType, 1)
		e.run(time.Minute)
		assert.Equal(t, fleet.StatusIdle, e.statusOf(cheap.RequestID), "the cheap node is kept")
		assert.Equal(t, fleet.StatusTerminating, e.statusOf(dear.RequestID), "the dear node is released")
		require.True(t, e.runUntil(2*time.Hour, e.terminatedReq(dear.RequestID)), "the dear node's release lands")
		for _, ch := range servers(e.vultr.Ledger().Charges) {
			if ch.Plan == dearVultr {
				assert.Equal(t, time.Hour, ch.Billed, "released at the end of its paid hour")
			}
		}
	})
}

// The same fleet scales down to none (both releases wait for the end of
// their paid hour), then grows to one before either hour ends: the cheap
// node is taken back (its next hour costs $1.68, the dear one's $2.397);
// before keepCost the one with the most paid time left (the dear one) was.
func TestGrowTakesBackTheReleaseCheapestToKeep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		cheap, dear := e.mixedFleet(cheapVultr, dearVultr, vultrType, 0)
		e.run(time.Minute)
		require.Equal(t, fleet.StatusTerminating, e.statusOf(cheap.RequestID))
		require.Equal(t, fleet.StatusTerminating, e.statusOf(dear.RequestID))
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, vultrType(cheapVultr, dearVultr))))
		e.run(time.Minute)
		assert.Equal(t, 1, e.count(fleet.EventReleaseCancelled), "one release taken back")
		assert.Equal(t, fleet.StatusIdle, e.statusOf(cheap.RequestID), "the cheap node is taken back")
		assert.Equal(t, fleet.StatusTerminating, e.statusOf(dear.RequestID), "the dear node's release goes on")
		assert.Equal(t, 2, len(servers(e.vultr.Ledger().Charges)), "nothing bought")
	})
}

// Two Hot Aisle VMs past their minimums have no paid time left (billed per
// minute): a vm-mi300x-2 (the older) and a vm-mi300x-1 at half its price.
// Acquire hands out the cheaper; before keepCost, the older.
func TestAcquirePrefersTheCheaperNodeAmongEqualPaidTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		dear, cheap := e.mixedFleet("vm-mi300x-2", "vm-mi300x-1", hotType, 2)
		require.Less(t, cheap.Offer.PricePerHour, dear.Offer.PricePerHour)
		e.run(90 * time.Minute) // both minimums (60 and 30 minutes) are over
		got, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		assert.Equal(t, "vm-mi300x-1", got.Offer.InstanceType, "the cheaper of two nodes with no paid time left")
		got, err = e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		assert.Equal(t, dear.RequestID, got.RequestID, "then the dearer")
	})
}

// terminatedReq reports whether the fleet's node with request id id is
// terminated (or gone from the records).
func (e *env) terminatedReq(id string) func() bool {
	return func() bool {
		for _, in := range e.m.Instances("f") {
			if in.RequestID == id {
				return in.Status == fleet.StatusTerminated
			}
		}
		return true
	}
}
