package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A listing that leaves a server out proves nothing about it (tester Z):
// Vultr MI300X bare metal active 54:00 after its create (inside the
// 55-minute boot deadline), then left out of the bare-metal list for two
// minutes; the orchestrator runs a job on it until 57:30. The provisioning
// deadline is judged on a listing that showed the server (it was released
// as still provisioning, and a replacement bought), and its delete lock is
// counted from the last listing that showed it not running (the omitting
// listing moved it past the hour): one server, one hour billed, where 3
// hours were.
func TestVultrListOmissionIsNotAMissedDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := sim.DefaultVultrBareMetalTiming()
		tm.Pending = 54 * time.Minute
		e := newEnv(t, fleet.Policy{}, sim.WithVultrTiming("vbm-*", tm))
		stop := e.running()
		s := spec("f", 1, vultrType(mi300x))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(context.Background(), s))
		var created time.Time
		for created.IsZero() {
			time.Sleep(time.Second)
			if rs := e.vultr.Resources(); len(rs) > 0 {
				created = rs[0].Created
			}
		}
		time.Sleep(time.Until(created.Add(tm.Pending + 5*time.Second)))
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: "GET /v2/bare-metals", VisibilityLag: 24 * time.Hour, Duration: 2 * time.Minute}))
		var inst fleet.Instance
		var err error
		for limit := time.Now().Add(3 * time.Hour); ; time.Sleep(10 * time.Second) {
			require.True(t, time.Now().Before(limit), "no node handed out")
			if inst, err = e.m.Acquire(t.Context(), "f"); err == nil {
				break
			}
		}
		acquired := time.Since(created)
		time.Sleep(max(0, time.Until(created.Add(57*time.Minute+30*time.Second))))
		require.NoError(t, e.m.MarkIdle(inst.ID))
		time.Sleep(4 * time.Hour)
		stop()
		var billed time.Duration
		var desc string
		for _, c := range servers(e.vultr.Ledger().Charges) {
			billed += c.Billed
			desc += fmt.Sprintf("[%v..%v billed %v] ", c.From.Sub(created).Round(time.Second), c.To.Sub(created).Round(time.Second), c.Billed)
		}
		var missed []string
		for _, ev := range e.eventsOf(fleet.EventDeadlineMissed) {
			missed = append(missed, fmt.Sprintf("%v %s", ev.Time.Sub(created).Round(time.Second), ev.Message))
		}
		assert.Equal(t, time.Hour, billed, "servers (from the first create): %s; deadline missed: %v; node handed out %v after the create",
			desc, missed, acquired.Round(time.Second))
	})
}
