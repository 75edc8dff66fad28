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

// calmMetalPlay runs one idle Vultr A100 Cloud GPU (IdleTimeout 1 min, never used)
// under Run, with Vultr's bare-metal listing refused for good (403, a key
// without bare-metal access) or not, and asks Acquire for a node at 52:00
// after the billing start (a short job that would end before 57:00). It
// returns when the first VM's billing ended (from its start), whether the
// Acquire got it, and the billed time and USD of all the VMs (without an
// idle node the orchestrator applies the spec again and waits for one).
func calmMetalPlay(t *testing.T, refuse bool) (end time.Duration, acquired bool, billed time.Duration, usd float64) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		if refuse {
			refuseVultrMetal(e, 0)
		}
		s := spec("web", 1, vultrType("vcg-a100-12c-120g-80vram"))
		s.IdleTimeout = time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		stop := e.running()
		for len(e.vultr.Ledger().Charges) == 0 {
			time.Sleep(time.Second)
		}
		from := e.vultr.Ledger().Charges[0].From
		time.Sleep(time.Until(from.Add(52 * time.Minute)))
		inst, err := e.m.Acquire(t.Context(), "web")
		acquired = err == nil
		if !acquired { // the orchestrator grows the fleet again for its job
			require.True(t, errors.Is(err, fleet.ErrNoIdle), "%v", err)
			require.NoError(t, e.m.Apply(t.Context(), s))
			for ; err != nil; inst, err = e.m.Acquire(t.Context(), "web") {
				time.Sleep(10 * time.Second)
			}
		}
		time.Sleep(2 * time.Minute) // a 2-minute job
		require.NoError(t, e.m.MarkIdle(inst.ID))
		time.Sleep(time.Until(from.Add(3 * time.Hour)))
		stop()
		c := e.vultr.Ledger().Charges[0]
		end = c.To.Sub(c.From).Round(time.Second)
		for _, c := range e.vultr.Ledger().Charges {
			billed += c.Billed
			usd += c.USD
		}
	})
	return end, acquired, billed, usd
}

// A Vultr key without bare-metal access (403 on its listing for good, the
// case fleet/kindlist.go serves) leaves Vultr calm for its VMs: an account
// refusal does not pass by itself and says nothing of the next VM delete,
// so an idle VM stays acquirable until 57:00 and serves a job at 52:00, as
// with bare metal listable: 1 h billed (tester AK: released at 50:00, a
// second VM bought, 2 h).
func TestBareMetalListingRefusalLeavesVultrCalm(t *testing.T) {
	cEnd, cAcq, cBilled, cUSD := calmMetalPlay(t, false)
	end, acq, billed, usd := calmMetalPlay(t, true)
	t.Logf("bare metal listable: released at %v, Acquire at 52:00 served %v, billed %v, $%.3f", cEnd, cAcq, cBilled, cUSD)
	t.Logf("bare metal refused:  released at %v, Acquire at 52:00 served %v, billed %v, $%.3f", end, acq, billed, usd)
	assert.Equal(t, cBilled, billed, "the 2-minute job at 52:00 costs no second hour")
	assert.True(t, acq, "the Acquire at 52:00 served by the idle VM (the calm margin)")
	assert.Greater(t, end, 55*time.Minute, "released at the calm margin (57:00), not the wide one (50:00)")
}
