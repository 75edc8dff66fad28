package fleet_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two replicas, a Vultr Cloud GPU fleet of one node. The holder runs the
// job's node; it dies 25 s before the node's first billed hour ends, and
// the job's MarkIdle is recorded through the other replica 15 s before
// that end; the other replica takes the fleet over after the lease TTL
// (30 s), a few seconds into the second hour, and carries the mark out as
// of when it was recorded (Intent.At). The second hour is paid by then.
// The orchestrator's next job comes at 1:10 (Acquire, else grow with
// Apply through the live replica).
// Expected (as for a node that goes idle seconds before the hour, and for
// a release that missed its hour: kept to the paid hour's last safe
// moment, acquirable): the 1:10 job gets the same VM, 2 h billed.
// Holds on main: the fleet is taken over at the hour's end, the node kept,
// handed out at 1:10, released idle at 1:57: one VM, 2 h billed. (No
// other test plays a failover mark across a Vultr hour's end.)
func TestVultrMarkIdleCarriedOutAfterTheHourEndsKeepsThePaidHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		rs := apReplicas(t, e, fleet.Policy{}, 2)
		time.Sleep(time.Minute)
		s := spec("v", 1, vultrType("vcg-a100-12c-120g-80vram"))
		s.IdleTimeout = time.Minute
		h := apConverge(t, rs, s)
		in, err := rs.ms[h].Acquire(t.Context(), "v")
		require.NoError(t, err)
		end := apCharge(t, e).From.Add(time.Hour)
		time.Sleep(time.Until(end.Add(-25 * time.Second)))
		rs.stop(h)
		other := 1 - h
		time.Sleep(time.Until(end.Add(-15 * time.Second)))
		require.NoError(t, rs.ms[other].MarkIdle(in.ID))
		time.Sleep(time.Until(end.Add(10 * time.Minute)))
		var got fleet.Instance
		got, err = rs.ms[other].Acquire(t.Context(), "v")
		if errors.Is(err, fleet.ErrNoIdle) {
			require.NoError(t, rs.ms[other].Apply(t.Context(), s)) // grow to demand
			for deadline := time.Now().Add(time.Hour); ; time.Sleep(5 * time.Second) {
				require.True(t, time.Now().Before(deadline), "no node for the second job")
				if got, err = rs.ms[other].Acquire(t.Context(), "v"); err == nil {
					break
				}
			}
		}
		waited := time.Since(end.Add(10 * time.Minute))
		time.Sleep(10 * time.Minute)
		require.NoError(t, rs.ms[other].MarkIdle(got.ID))
		time.Sleep(4 * time.Hour)
		rs.stopAll()
		var billed time.Duration
		cs := servers(e.vultr.Ledger().Charges)
		for _, c := range cs {
			billed += c.Billed
			t.Logf("%s: %v..%v billed %v", c.ResourceID, c.From.Sub(end.Add(-time.Hour)).Round(time.Second),
				c.To.Sub(end.Add(-time.Hour)).Round(time.Second), c.Billed)
		}
		apDump(t, e, end)
		assert.Len(t, cs, 1, "a second VM bought while the first one's paid second hour was deleted")
		assert.Equal(t, 2*time.Hour, billed)
		assert.Equal(t, in.ID, got.ID, "the 1:10 job ran on a new VM")
		assert.Less(t, waited, time.Minute, "the 1:10 job waited %v", waited.Round(time.Second))
	})
}
