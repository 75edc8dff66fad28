package vultr_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A create whose context ends while it waits for the client's rate limiter
// was never sent: it cannot have created a server. fleet.ErrNotSent says
// exactly that ("the provider gave up before sending the request (its
// context ended while it waited for its turn ...)"), and the Manager takes
// a create failing with it as a definite failure instead of an ambiguous one
// that blocks the offer for CreateLookupGrace. The error must answer it.
func TestCreateCutInLimiterWaitIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, c := newSim(t, vultr.WithRateLimit(1.0/60, 1)) // one call a minute
		_, err := c.GetInstance(t.Context(), "nope")      // takes the only token
		require.ErrorIs(t, err, fleet.ErrNotFound)
		before := len(v.Calls())

		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err = c.CreateInstance(ctx, &vultr.InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb", Label: "x", OSID: 1743})
		require.Error(t, err)
		assert.Equal(t, before, len(v.Calls()), "nothing was sent")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, fleet.ErrNotSent, "a create cut before it was sent is a definite failure: %v", err)
	})
}

// The same with a context cancelled before the call: no request leaves.
func TestCreateWithCancelledContextIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, c := newSim(t)
		before := len(v.Calls())
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.CreateInstance(ctx, &vultr.InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb", Label: "x", OSID: 1743})
		require.Error(t, err)
		assert.Equal(t, before, len(v.Calls()), "nothing was sent")
		assert.ErrorIs(t, err, fleet.ErrNotSent, "a create never sent is a definite failure: %v", err)
	})
}

// At the Provider the Manager uses: a Create cut in the limiter wait.
func TestProviderCreateCutInLimiterWaitIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := sim.NewVultr()
		p := vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client()),
			vultr.WithRateLimit(1.0/60, 1)))
		offers, err := p.Offers(t.Context()) // the public lists take the tokens
		require.NoError(t, err)
		var offer fleet.Offer
		for _, o := range offers {
			if o.InstanceType == "vc2-1c-1gb" && o.Region == "ewr" {
				offer = o
			}
		}
		require.NotEmpty(t, offer.InstanceType)
		before := len(v.Calls())
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err = p.Create(ctx, fleet.CreateRequest{Offer: offer, Label: fleet.Label{Owner: "o", Fleet: "f", RequestID: "0123456789ab"}})
		require.Error(t, err)
		assert.Equal(t, before, len(v.Calls()), "nothing was sent")
		assert.ErrorIs(t, err, fleet.ErrNotSent, "%v", err)
	})
}
