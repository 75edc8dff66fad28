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

// A Vultr bare-metal server that becomes active while the Manager restarts
// (pending 54 min; stopped at 53:00, back at 54:20 on the same Store) stays
// acquirable while its delete may still be locked, when a delete can still
// land in the hour (tester AE): the job waiting for it gets it. Its running
// began unseen, and counting the lock from the create (a restart late in
// the hour must not keep a node into the next: TestVultrRestartLateInThe
// HourAssumesNoDeleteLock) released it unused at once: billed an hour for
// nothing, the job without a node.
func TestVultrBareMetalActiveDuringARestartIsHandedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, _, from := bareMetalDownAt53(t)
		defer w.finish()
		time.Sleep(time.Until(from.Add(54*time.Minute + 20*time.Second)))
		w.start()
		inst, ok := w.acquire("f", 5*time.Minute)
		if !assert.True(t, ok, "the node bought for the job, ready at 54:00 and undeletable until 59:00, was never handed out") {
			for _, in := range w.m.Instances("f") {
				t.Logf("node %s: %s (ready %v after create)", in.ID, in.Status, in.Ready.Sub(from))
			}
			for _, s := range w.m.Fleets() {
				t.Logf("fleet %s: Nodes %d", s.Name, s.Nodes)
			}
			return
		}
		time.Sleep(time.Until(from.Add(90 * time.Minute)))
		require.NoError(t, w.m.MarkIdle(inst.ID))
		w.settle(5 * time.Hour)
		assert.Len(t, w.ledger(), 1, "one server for one job")
	})
}

// bareMetalDownAt53 is a running Manager with a fleet "f" of one Vultr
// MI300X bare-metal node (IdleTimeout 5 min) that becomes active 54:00
// after its create (deletes refused until 59:00), stopped at 53:00; it
// returns the world, the spec and the billing start. Inside a bubble.
func bareMetalDownAt53(t *testing.T) (*liveWorld, fleet.Spec, time.Time) {
	tm := sim.DefaultVultrBareMetalTiming()
	tm.Pending = 54 * time.Minute
	w := newLiveWorld(t, fleet.Policy{}, sim.WithVultrTiming("vbm-*", tm))
	s := fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: 5 * time.Minute, Requirements: vultrType(mi300x)}
	require.NoError(t, w.m.Apply(context.Background(), s))
	for len(w.ledger()) == 0 {
		time.Sleep(time.Second)
	}
	from := w.ledger()[0].From
	time.Sleep(time.Until(from.Add(53 * time.Minute)))
	w.stop()
	return w, s, from
}

// Vultr bare metal active at 54:00 (deletes refused until 59:00) while the
// Manager was down (53:00 to 56:00, Store lost or kept): a job waiting for
// it gets it (tester AH). Its running began unseen; the lock counted from
// its first listing would end past the hour, and the node was released at
// once, unused, its delete landing at 59:20 anyway. It stays acquirable
// until a minute before the hour ends, when its deletes are tried.
func TestVultrBareMetalAdoptedLateInTheHourIsHandedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, s, from := bareMetalDownAt53(t)
		defer w.finish()
		ctx := context.Background()
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
