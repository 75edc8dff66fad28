package vultr_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// VPCs of servers against the Vultr fake.

func TestSimVPCAttachListDetach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := newSim(t)
		ctx := t.Context()
		vpc, err := c.CreateVPC(ctx, &vultr.VPCCreate{Region: "ewr", Description: "fleet-a"})
		require.NoError(t, err)
		assert.NotEmpty(t, vpc.V4Subnet, "auto-assigned subnet")
		assert.NotZero(t, vpc.V4SubnetMask)

		inst := createVM(t, c, "fleet-a-0")
		time.Sleep(90*time.Second + 5*time.Minute + time.Second) // active, lock over
		require.NoError(t, c.AttachInstanceVPC(ctx, inst.ID, vpc.ID))
		att, err := vultr.Collect(c.ListInstanceVPCs(ctx, inst.ID))
		require.NoError(t, err)
		require.Len(t, att, 1)
		assert.Equal(t, vpc.ID, att[0].ID)
		assert.NotEmpty(t, att[0].IPAddress)

		assert.ErrorIs(t, c.DeleteVPC(ctx, vpc.ID), fleet.ErrVPCInUse)

		require.NoError(t, c.DetachInstanceVPC(ctx, inst.ID, vpc.ID))
		att, err = vultr.Collect(c.ListInstanceVPCs(ctx, inst.ID))
		require.NoError(t, err)
		assert.Empty(t, att)
		require.NoError(t, c.DeleteVPC(ctx, vpc.ID))
		_, err = c.GetVPC(ctx, vpc.ID)
		assert.ErrorIs(t, err, fleet.ErrNotFound)
	})
}

func TestSimAttachAtCreateGivesInternalIP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := newSim(t)
		ctx := t.Context()
		vpc, err := c.CreateVPC(ctx, &vultr.VPCCreate{Region: "ewr", Description: "fleet-b"})
		require.NoError(t, err)
		inst := createVM(t, c, "fleet-b-0", vpc.ID)
		time.Sleep(91 * time.Second)
		got, err := c.GetInstance(ctx, inst.ID)
		require.NoError(t, err)
		pip, ok := got.PrivateIP()
		require.True(t, ok)
		att, err := vultr.Collect(c.ListInstanceVPCs(ctx, inst.ID))
		require.NoError(t, err)
		require.Len(t, att, 1)
		assert.Equal(t, att[0].IPAddress, pip)
		vpcs, err := vultr.Collect(c.ListVPCs(ctx))
		require.NoError(t, err)
		assert.Len(t, vpcs, 1)
	})
}

func TestSimFlakyAttachAndUnsupportedPlan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, c := newSim(t)
		ctx := t.Context()
		vpc, err := c.CreateVPC(ctx, &vultr.VPCCreate{Region: "ewr"})
		require.NoError(t, err)
		inst := createVM(t, c, "flaky")
		bm, err := c.CreateBareMetal(ctx, &vultr.BareMetalCreate{Region: "ewr", Plan: "vbm-4c-32gb", ImageID: "docker"})
		require.NoError(t, err)
		time.Sleep(46 * time.Minute) // both active and unlocked

		require.NoError(t, v.FlakyAttach(2))
		before := len(v.Calls())
		assert.ErrorIs(t, c.AttachInstanceVPC(ctx, inst.ID, vpc.ID), fleet.ErrAttachFailed)
		assert.Len(t, v.Calls(), before+1, "attach is never retried by the client")
		assert.ErrorIs(t, c.AttachInstanceVPC(ctx, inst.ID, vpc.ID), fleet.ErrAttachFailed)
		require.NoError(t, c.AttachInstanceVPC(ctx, inst.ID, vpc.ID))

		assert.ErrorIs(t, c.AttachBareMetalVPC(ctx, bm.ID, vpc.ID), fleet.ErrAttachFailed, "flaky first")
		assert.ErrorIs(t, c.AttachBareMetalVPC(ctx, bm.ID, vpc.ID), fleet.ErrAttachFailed)
		assert.ErrorIs(t, c.AttachBareMetalVPC(ctx, bm.ID, vpc.ID), fleet.ErrVPCUnsupported)
		att, err := vultr.Collect(c.ListBareMetalVPCs(ctx, bm.ID))
		require.NoError(t, err)
		assert.Empty(t, att)
	})
}
