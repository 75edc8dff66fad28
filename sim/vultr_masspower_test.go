package sim_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vultr/govultr/v3"

	"github.com/gpufleet/gpufleet/sim"
)

// The mass power routes (POST /v2/bare-metals/halt|start|reboot with
// {"baremetal_ids": […]}, and the instance ones with "instance_ids"), as
// govultr's MassHalt, MassStart and MassReboot call them; a list naming an
// unknown server changes nothing.
func TestBareMetalMassPowerRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		v := sim.NewVultr(sim.WithVultrRateLimit(0, 0))
		c := newGovultr(t, v)
		bm, _, err := c.BareMetalServer.Create(ctx, &govultr.BareMetalCreate{Region: "ord",
			Plan: "vbm-256c-2048gb-8-mi300x-gpu", ImageID: "docker", Label: "mass"})
		require.NoError(t, err)
		time.Sleep(sim.DefaultVultrBareMetalTiming().Pending + sim.DefaultVultrBareMetalTiming().Lock + time.Minute)
		require.NoError(t, c.BareMetalServer.MassHalt(ctx, []string{bm.ID}))
		got, _, err := c.BareMetalServer.Get(ctx, bm.ID)
		require.NoError(t, err)
		assert.Equal(t, "stopped", got.PowerStatus)
		require.NoError(t, c.BareMetalServer.MassStart(ctx, []string{bm.ID}))
		require.NoError(t, c.BareMetalServer.MassReboot(ctx, []string{bm.ID}))
		require.Error(t, c.BareMetalServer.MassHalt(ctx, []string{bm.ID, "no-such-server"}))
		got, _, err = c.BareMetalServer.Get(ctx, bm.ID)
		require.NoError(t, err)
		assert.Equal(t, "running", got.PowerStatus, "an unknown id in the list: nothing halted")

		in, _, err := c.Instance.Create(ctx, &govultr.InstanceCreateReq{Region: "ewr", Plan: "vc2-1c-1gb", OsID: 2284, Label: "mass"})
		require.NoError(t, err)
		time.Sleep(10 * time.Minute)
		require.NoError(t, c.Instance.MassHalt(ctx, []string{in.ID}))
		gotIn, _, err := c.Instance.Get(ctx, in.ID)
		require.NoError(t, err)
		assert.Equal(t, "stopped", gotIn.PowerStatus)
	})
}
