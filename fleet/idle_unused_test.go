package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Vultr node nobody ever Acquires (the job it was ordered for went
// elsewhere) goes at the last safe moment of its first hour, however long
// its IdleTimeout (fleet/doc.go, Spec.IdleTimeout, issue 17 acceptance 1:
// "IdleTimeout only applies where releasing later costs more"): billed one
// hour, for a Cloud GPU with the 3-hour IdleTimeout of Spec's example and
// for the README's bare-metal fleet (IdleTimeout 30 min, ready 40 min in).
// Tester U found a rule that kept never-used nodes IdleTimeout past ready
// billing them 4 and 2 hours.
func TestNeverUsedVultrNodeBilledOneHour(t *testing.T) {
	for _, c := range []struct {
		name string
		req  fleet.Requirements
		idle time.Duration
	}{
		{"Cloud GPU VM, IdleTimeout 3h (Spec's example)", vultrType("vcg-a100-12c-120g-80vram"), 3 * time.Hour},
		{"bare metal, IdleTimeout 30m (README's fleet)", vultrType(mi300x), 30 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newLiveWorld(t, fleet.Policy{})
				defer w.finish()
				require.NoError(t, w.m.Apply(context.Background(), fleet.Spec{Name: "f", Nodes: 1, IdleTimeout: c.idle, Requirements: c.req}))
				w.settle(12 * time.Hour)
				cs := w.ledger()
				require.Len(t, cs, 1)
				assert.False(t, cs[0].Live, "still billing after 12 h")
				assert.Equal(t, time.Hour, cs[0].Billed, "a node nobody used, released %v after its billing start (%s)",
					cs[0].To.Sub(cs[0].From).Round(time.Second), cs[0].Description)
			})
		})
	}
}

// A node never used that the re-buy hold keeps goes at its minimum's end
// plus the hold, or IdleTimeout after it became ready when later (tester
// X): a Hot Aisle VM fleet of 2 (IdleTimeout 20 min, RebuySpares 1,
// RebuyHold 1 min), one node busy 2 hours, the other never used: the
// spare is billed about 31 minutes (IdleTimeout was counted from the end
// of its minimum: 50).
func TestUnusedSpareHeldFromItsMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuySpares: 1, RebuyHold: time.Minute})
		stop := e.running()
		nodes := e.idleFleet("f", 2, 20*time.Minute, hotType("vm-mi300x-1"))
		busy, err := e.m.Acquire(t.Context(), "f") // the fleet's job: 2 h
		require.NoError(t, err)
		var spare fleet.Instance
		for _, n := range nodes {
			if n.ID != busy.ID {
				spare = n
			}
		}
		time.Sleep(2 * time.Hour)
		require.NoError(t, e.m.MarkIdle(busy.ID))
		time.Sleep(2 * time.Hour)
		stop()
		found := false
		for _, c := range servers(e.hot.Ledger().Charges) {
			if c.ResourceID == spare.ID {
				found = true
				assert.LessOrEqual(t, c.Billed, 32*time.Minute, "the unused spare, released %v after its create", c.To.Sub(spare.Created))
			}
		}
		assert.True(t, found)
	})
}
