package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Vultr bare metal active at 54:00 (deletes refused until 59:00) while the
// Manager was down (53:00 to 56:00, Store lost or kept): a job waiting for
// it gets it (tester AH). Its running began unseen; the lock counted from
// its first listing would end past the hour, and the node was released at
// once, unused, its delete landing at 59:20 anyway. It stays acquirable
// until a minute before the hour ends, when its deletes are tried.
func TestVultrBareMetalAdoptedLateInTheHourIsHandedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := sim.DefaultVultrBareMetalTiming()
		tm.Pending = 54 * time.Minute
		w := newLiveWorld(t, fleet.Policy{}, sim.WithVultrTiming("vbm-*", tm))
		defer w.finish()
		ctx := context.Background()
		s := fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: 5 * time.Minute, Requirements: vultrType(mi300x)}
		require.NoError(t, w.m.Apply(ctx, s))
		for len(w.ledger()) == 0 {
			time.Sleep(time.Second)
		}
		from := w.ledger()[0].From
		time.Sleep(time.Until(from.Add(53 * time.Minute)))
		w.stop()
		w.store = fleet.NewMemoryStore() // lost
		time.Sleep(time.Until(from.Add(56 * time.Minute)))
		w.start()
		require.NoError(t, w.m.Apply(ctx, s))
		_, ok := w.acquire("f", 5*time.Minute)
		for _, in := range w.m.Instances("f") {
			t.Logf("node %s: %s, ready %v after its create; now %v", in.ID, in.Status, in.Ready.Sub(from), time.Since(from))
		}
		assert.True(t, ok, "the node bought for the job, ready at 56:00 and undeletable until 59:00, was never handed out")
	})
}
