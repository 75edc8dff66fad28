package hotaisle_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A provision whose context ends while it waits for the client's rate
// limiter, or that is called with a cancelled context, was never sent: its
// error answers fleet.ErrNotSent (a definite failure for the Manager), and
// no request reached the API.
func TestProvisionCutBeforeSendingIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle()
		c := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client()),
			hotaisle.WithRateLimit(1.0/60, 1)) // one call a minute
		_, err := c.GetVM(t.Context(), "nope") // takes the only token
		require.ErrorIs(t, err, fleet.ErrNotFound)
		before := len(h.Calls())

		req := hotaisle.VMProvisionRequest{VMSpecs: hotaisle.VMSpecs{CPUCores: 13}}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err = c.ProvisionVM(ctx, req)
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, fleet.ErrNotSent, "%v", err)

		ctx, cancel = context.WithCancel(t.Context())
		cancel()
		_, err = c.ReserveBareMetal(ctx, hotaisle.BareMetalReservation{})
		require.Error(t, err)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, fleet.ErrNotSent, "%v", err)
		assert.Equal(t, before, len(h.Calls()), "nothing was sent")
	})
}
