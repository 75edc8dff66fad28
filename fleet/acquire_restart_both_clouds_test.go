package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acquire across a restart on the same Store, on both clouds: a node handed
// out and not given back before Close stays taken after the restart (never
// handed out twice), a node given back with MarkIdle just before Close (no
// pass carried the mark out) is handed out again after it (never lost),
// and the one handed out before Close is handed out again once the new
// Manager is given its MarkIdle. Holds on main. close_intents_test.go covers
// each call's intent across Close on Vultr; this adds Hot Aisle VMs and the
// hand-out round trip (taken, given back, handed out again) after the
// restart.
func TestAcquireAcrossARestartOnBothClouds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.m.Apply(t.Context(), spec("rx", 2, vultrVM("ewr"))))
		require.NoError(t, e.m.Apply(t.Context(), spec("hx", 2, hotType("vm-mi300x-1"))))
		ready := func(m *fleet.Manager, f string) bool {
			n := 0
			for _, in := range m.Instances(f) {
				if in.Status == fleet.StatusIdle {
					n++
				}
			}
			return n == 2
		}
		require.True(t, e.runUntil(time.Hour, func() bool { return ready(e.m, "rx") && ready(e.m, "hx") }), "not ready")
		kept := map[string]string{}
		for _, f := range []string{"rx", "hx"} {
			a, err := e.m.Acquire(t.Context(), f)
			require.NoError(t, err)
			b, err := e.m.Acquire(t.Context(), f)
			require.NoError(t, err)
			require.NotEqual(t, a.ID, b.ID)
			require.NoError(t, e.m.MarkIdle(b.ID))
			kept[f] = a.ID
		}
		e.m.Close()
		e.m = e.manager(e.store)
		e.run(2 * time.Minute)
		for _, f := range []string{"rx", "hx"} {
			got, err := e.m.Acquire(t.Context(), f)
			require.NoError(t, err, "%s: the node given back before Close", f)
			assert.NotEqual(t, kept[f], got.ID, "%s: handed out twice", f)
			_, err = e.m.Acquire(t.Context(), f)
			assert.ErrorIs(t, err, fleet.ErrNoIdle, "%s: both taken", f)
			require.NoError(t, e.m.MarkIdle(kept[f]))
			again, err := e.m.Acquire(t.Context(), f)
			require.NoError(t, err, "%s: given back after the restart", f)
			assert.Equal(t, kept[f], again.ID)
		}
		require.NoError(t, e.m.Delete(t.Context(), "rx"))
		require.NoError(t, e.m.Delete(t.Context(), "hx"))
		e.run(3 * time.Hour)
		e.assertNothingLeft()
	})
}
