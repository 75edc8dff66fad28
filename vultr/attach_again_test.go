package vultr_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An attach that took effect but answered 500, then the same attach again:
// Vultr answers 400 "The VPC network is already attached to this server".
// The client reports fleet.ErrAlreadyAttached; the Provider counts it as
// attached (nil), for a VM and for bare metal.
func TestAttachAgainAfterA500ThatCommitted(t *testing.T) {
	for _, metal := range []bool{false, true} {
		name := map[bool]string{false: "vm", true: "bare-metal"}[metal]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				v, p := simProvider(t)
				c := vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client()))
				key, route := "vultr/ord/vc2-2c-4gb", "POST /v2/instances/{id}/vpcs/attach"
				if metal {
					key, route = "vultr/ord/vbm-256c-2048gb-8-mi300x-gpu", "POST /v2/bare-metals/{id}/vpcs/attach"
				}
				offers, err := p.Offers(t.Context())
				require.NoError(t, err)
				inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: offerByKey(t, offers, key), Label: fleet.Label{Fleet: "c", RequestID: "0123456789ab"}})
				require.NoError(t, err)
				vpc, err := p.CreateVPC(t.Context(), "ord", fleet.Label{Fleet: "c", RequestID: "ba9876543210"})
				require.NoError(t, err)
				time.Sleep(46 * time.Minute) // active and past the lock, either kind

				require.NoError(t, v.Inject(sim.Fault{Route: route, Status: http.StatusInternalServerError, AfterCommit: true, Times: 1}))
				assert.ErrorIs(t, p.AttachVPC(t.Context(), inst.ID, vpc.ID), fleet.ErrUnavailable, "committed, answered 500")
				ids, err := p.InstanceVPCs(t.Context(), inst.ID)
				require.NoError(t, err)
				assert.Equal(t, []string{vpc.ID}, ids, "the listing shows the attach")

				if metal {
					assert.ErrorIs(t, c.AttachBareMetalVPC(t.Context(), inst.ID, vpc.ID), fleet.ErrAlreadyAttached)
				} else {
					assert.ErrorIs(t, c.AttachInstanceVPC(t.Context(), inst.ID, vpc.ID), fleet.ErrAlreadyAttached)
				}
				assert.NoError(t, p.AttachVPC(t.Context(), inst.ID, vpc.ID), "already attached is attached")
				ids, err = p.InstanceVPCs(t.Context(), inst.ID)
				require.NoError(t, err)
				assert.Equal(t, []string{vpc.ID}, ids, "still one attachment")
			})
		})
	}
}
