package vultr_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The client takes the base URL gpufleet-sim prints (GPUFLEET_SIM_VULTR_URL,
// ".../v2", as Vultr's docs and govultr spell it) as well as the bare
// origin (tester AA: ".../v2" sent every call to /v2/v2/... and the 404
// named /v2/regions).
func TestBaseURLWithOrWithoutV2(t *testing.T) {
	srv := httptest.NewServer(sim.NewVultr())
	defer srv.Close()
	for _, u := range []string{srv.URL, srv.URL + "/", srv.URL + "/v2", srv.URL + "/v2/"} {
		c := vultr.New(sim.DefaultAPIKey, vultr.WithBaseURL(u))
		regions, err := vultr.Collect(c.ListRegions(context.Background()))
		require.NoError(t, err, u)
		assert.NotEmpty(t, regions, u)
	}
}
