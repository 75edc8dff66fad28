package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One fleet with a node on each provider: a Vultr VM (billed per started
// hour) applied first, then the spec widened to both clouds with Nodes 2
// at 40:00, so a Hot Aisle VM (30-min minimum, the spec's new type) joins;
// MinNodes 2. Acquire hands out the node with the most paid time left,
// comparing an hourly node with one under its minimum: at 45:00 of the
// Vultr hour the Hot Aisle VM (about 25 min of its minimum left, the Vultr
// VM 15 min); after the Vultr hour rolled over (idle Vultr nodes kept by
// MinNodes 2) at 62:00 the Vultr VM (58 min left against ~8). Holds on
// main; kept as a guard.
func TestAcquireBestAcrossClouds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{RebuyHoldOff: true})
		// the new node must be a Hot Aisle VM (the Vultr plan is cheaper):
		// the spec asks for it; the Vultr node stays a member (Apply: changed
		// requirements apply to instances created from then on)
		both := fleet.Requirements{InstanceTypes: []string{"vm-mi300x-1"}}
		s := spec("a", 1, vultrType(vm))
		s.IdleTimeout = 5 * time.Minute
		s.MinNodes = 1
		require.NoError(t, e.m.Apply(t.Context(), s))
		stop := e.running()
		defer stop()
		v := acquireWithin(t, e, "a", time.Hour)
		require.NoError(t, e.m.GiveBack(v))
		from := serverCharge(e, v.ID).From
		time.Sleep(time.Until(from.Add(40 * time.Minute)))
		s.Requirements, s.Nodes, s.MinNodes = both, 2, 2
		require.NoError(t, e.m.Apply(t.Context(), s))
		var h fleet.Instance
		for limit := time.Now().Add(time.Hour); h.ID == ""; time.Sleep(10 * time.Second) {
			require.True(t, time.Now().Before(limit), "no Hot Aisle node")
			for _, in := range e.m.Instances("a") {
				if in.Provider == fleet.ProviderHotAisle && in.Status == fleet.StatusIdle {
					h = in
				}
			}
		}
		for _, at := range []time.Duration{45 * time.Minute, 62 * time.Minute} {
			time.Sleep(time.Until(from.Add(at)))
			x, err := e.m.Acquire(t.Context(), "a")
			require.NoError(t, err)
			t.Logf("+%v: handed out %s (%s); Vultr %s, Hot Aisle %s created +%v", at, x.ID, x.Provider, v.ID, h.ID, h.Created.Sub(from).Round(time.Second))
			want := h.ID
			if at > time.Hour {
				want = v.ID
			}
			assert.Equal(t, want, x.ID, "+%v", at)
			require.NoError(t, e.m.GiveBack(x))
		}
	})
}
