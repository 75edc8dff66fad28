package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fleet is deleted early in its node's billing unit with the default
// policy, so the release waits for the unit's last safe moment (Vultr VM:
// the hour's end less the calm margin, 57:00; Hot Aisle bare metal: the
// 8-hour minimum's end less a minute). The holder dies seconds before that
// moment; the replica that takes the fleet over carries the stored release
// out in time: one unit billed, nothing left. (tester AP: holds; no replica
// test covered a deferred release at its moment.)
func TestDeferredReleaseCarriedOutAcrossAFailoverAtItsMoment(t *testing.T) {
	for _, c := range []struct {
		name   string
		req    fleet.Requirements
		moment time.Duration
		unit   time.Duration
	}{
		{"vultr vm", vultrVM("ewr"), 57 * time.Minute, time.Hour},
		{"hotaisle bare metal", hotType("bm-mi300x-8"), 479 * time.Minute, 8 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				rs := apReplicas(t, e, fleet.Policy{}, 2)
				time.Sleep(time.Minute)
				h := apConverge(t, rs, spec("dd", 1, c.req))
				from := apCharge(t, e).From
				time.Sleep(time.Until(from.Add(40 * time.Minute)))
				require.NoError(t, rs.ms[1-h].Delete(t.Context(), "dd"))
				time.Sleep(time.Until(from.Add(c.moment - 5*time.Second)))
				rs.stop(h)
				time.Sleep(3 * time.Hour)
				rs.stopAll()
				got := apCharge(t, e)
				t.Logf("billed %v (%s)", got.Billed, got.Description)
				assert.False(t, got.Live, "still billing")
				assert.Equal(t, c.unit, got.Billed)
				e.assertNothingLeft()
			})
		})
	}
}
