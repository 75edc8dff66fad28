package hotaisle_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A bare-metal server powered off out of band is Stopped in Get (its
// power/ says "Off"), and PoweredOff says so with one call.
func TestProviderSeesAHaltedBareMetalServerAsStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, p := simProvider(t, hotaisle.WithBareMetal(true))
		inst := createBareMetal(t, p)
		time.Sleep(11 * time.Minute) // the OS install
		got, err := p.Get(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.False(t, got.Stopped)
		assert.Equal(t, "installed/On", got.ProviderStatus)

		require.NoError(t, h.HaltOutOfBand(inst.ID))
		got, err = p.Get(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.True(t, got.Stopped, "power/ says Off")
		assert.Equal(t, "installed/Off", got.ProviderStatus)
		assert.True(t, got.Running(), "still counted as running: the Manager decides what a stop means")

		before := len(h.Calls())
		off, err := p.PoweredOff(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.True(t, off)
		require.Len(t, h.Calls(), before+1, "one call")
		assert.Equal(t, "GET", h.Calls()[before].Method)
		assert.Contains(t, h.Calls()[before].Path, "/bare_metal/"+inst.ID+"/power/")
	})
}

// A bare-metal server still installing its OS is not asked for its power:
// the install powers it off and on.
func TestProviderDoesNotReadPowerWhileInstalling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, p := simProvider(t, hotaisle.WithBareMetal(true))
		inst := createBareMetal(t, p)
		before := len(h.Calls())
		got, err := p.Get(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.False(t, got.Stopped)
		assert.Equal(t, fleet.StatusProvisioning, got.Status)
		assert.Len(t, h.Calls(), before+1, "the server only, not its power/")
	})
}

// A VM stopped out of band: PoweredOff reads its state/ with one call.
func TestProviderPoweredOffReadsAVMState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, p := simProvider(t)
		offers, err := p.Offers(t.Context())
		require.NoError(t, err)
		o := fleet.Filter(offers, fleet.Requirements{InstanceTypes: []string{"vm-mi300x-1"}})[0]
		inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "vm", RequestID: "0123456789ab"}})
		require.NoError(t, err)
		off, err := p.PoweredOff(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.False(t, off)
		require.NoError(t, h.HaltOutOfBand(inst.ID))
		before := len(h.Calls())
		off, err = p.PoweredOff(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.True(t, off)
		require.Len(t, h.Calls(), before+1, "one call")
		assert.Contains(t, h.Calls()[before].Path, "/virtual_machines/"+inst.ID+"/state/")
		_, err = p.PoweredOff(t.Context(), "no-such-vm")
		assert.ErrorIs(t, err, fleet.ErrNotFound)
	})
}

// Start on a bare-metal server of the sim halted out of band powers it on
// (POST of its power/power_on/): Get then sees it on, not Stopped.
func TestProviderStartPowersAHaltedSimServerOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, p := simProvider(t, hotaisle.WithBareMetal(true))
		inst := createBareMetal(t, p)
		time.Sleep(sim.DefaultHotAisleInstallTime)
		require.NoError(t, h.HaltOutOfBand(inst.ID))
		got, err := p.Get(t.Context(), inst.ID)
		require.NoError(t, err)
		require.True(t, got.Stopped)

		require.NoError(t, p.Start(t.Context(), inst.ID))
		got, err = p.Get(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.False(t, got.Stopped, "power/ says On again")
		assert.Equal(t, "installed/On", got.ProviderStatus)
		n := 0
		for _, c := range h.Calls() {
			if c.Route == "POST /api/teams/{team}/bare_metal/{server}/power/power_on/" && c.Status == 204 {
				n++
			}
		}
		assert.Equal(t, 1, n, "one power_on")
		assert.ErrorIs(t, p.Start(t.Context(), "enc1-gpu999"), fleet.ErrNotFound)
	})
}

// createBareMetal reserves the cheapest bare-metal offer as fleet "bm".
func createBareMetal(t *testing.T, p *hotaisle.Provider) fleet.Instance {
	t.Helper()
	offers, err := p.Offers(t.Context())
	require.NoError(t, err)
	o := fleet.Filter(offers, fleet.Requirements{BareMetal: fleet.Yes})[0]
	inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "bm", RequestID: "0123456789ab"}})
	require.NoError(t, err)
	return inst
}
