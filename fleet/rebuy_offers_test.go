package fleet

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fleet whose spec moved from a 30-minute VM to 8-hour bare metal has
// idle nodes of both. The re-buy hold is chosen per kind of offer (its
// minimum reservation), from that kind's jobs: each idle node is held for
// its own offer's hold, never for the other's (a 30-minute VM held 8 hours,
// or bare metal held for the VM's jobs), whatever order the Manager's maps
// give the nodes in.
func TestRebuyHoldIsPerOffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vm := vmOffer("hotaisle", 2.99, 30*time.Minute)
		bm := vmOffer("hotaisle", 27.12, 8*time.Hour)
		bm.InstanceType, bm.BareMetal = "bm-1", true
		p := newFakeProvider("hotaisle", vm, bm)
		m, _ := newTestManager(t, Config{Providers: []Provider{p}})
		s := Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute, Requirements: Requirements{InstanceTypes: []string{"vm-1"}}}
		require.NoError(t, m.Apply(t.Context(), s))
		passes(t, m, 3*time.Minute)
		job, err := m.Acquire(t.Context(), "f") // one job: the fleet's re-buy log
		require.NoError(t, err)
		passes(t, m, 4*time.Minute)
		require.NoError(t, m.MarkIdle(job.ID))
		s.Nodes, s.Requirements.InstanceTypes = 2, []string{"bm-1"}
		require.NoError(t, m.Apply(t.Context(), s))
		passes(t, m, 5*time.Minute)
		var vmRec, bmRec *InstanceRecord
		m.mu.Lock()
		for _, r := range m.insts {
			switch r.Instance.Offer.InstanceType {
			case "vm-1":
				vmRec = r
			case "bm-1":
				bmRec = r
			}
		}
		require.NotNil(t, vmRec)
		require.NotNil(t, bmRec)
		// Each node is held for its own offer's hold when its release is due
		// (the end of its minimum, less the margin): the VM after 30 minutes,
		// bare metal after 8 hours.
		vmDue := vmRec.Instance.Created.Add(29 * time.Minute)
		bmDue := bmRec.Instance.Created.Add(8*time.Hour - time.Minute)
		want := map[*InstanceRecord]time.Duration{
			vmRec: m.rebuyHold("f", vm, vmDue).hold,
			bmRec: m.rebuyHold("f", bm, bmDue).hold,
		}
		m.mu.Unlock()
		// The VM, within its first minimum's span of the job: the break-even
		// hold, one whole minimum. Bare metal has had no job of its own: no
		// hold (the VM's jobs say nothing of 8-hour nodes; tester X).
		require.Equal(t, 30*time.Minute, want[vmRec])
		require.Equal(t, time.Duration(0), want[bmRec])
		for range 50 {
			m.mu.Lock()
			m.rebuy["f"].choices = nil // chosen afresh, from whichever node the maps give first
			keep, hold := m.held(vmDue)
			m.rebuy["f"].choices = nil
			bmKeep, bmHold := m.held(bmDue)
			m.mu.Unlock()
			assert.True(t, keep[vmRec], "the VM kept past its minimum")
			assert.Equal(t, want[vmRec], hold[vmRec], "the VM's hold")
			assert.False(t, bmKeep[bmRec], "bare metal not held for the VM's jobs")
			assert.Zero(t, bmHold[bmRec], "bare metal's hold")
		}
		// Run on: the VM is released by its minimum's end plus its own hold
		// at the latest (an hour in), bare metal stays inside its 8 hours.
		passes(t, m, 55*time.Minute)
		m.mu.Lock()
		vmStatus, bmStatus := vmRec.Instance.Status, bmRec.Instance.Status
		m.mu.Unlock()
		assert.Contains(t, []Status{StatusTerminating, StatusTerminated}, vmStatus, "the 30-minute VM is not held for bare metal's 8 hours")
		assert.Equal(t, StatusIdle, bmStatus)
	})
}
