package hotaisle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server (or a proxy in front of it) that echoes the Authorization header
// into its request-id header: the Vultr client redacts X-Request-Id
// (vultr.parseError), the Hot Aisle client copies X-Request-Id, Request-Id or
// Cf-Ray into APIError.RequestID as is, and Error() prints it ("… (request
// id <id>)"). README: "API keys never appear in logs, errors or %v" (issue 12
// point 9 made Error() print the request id). Expected: no key in any field
// or formatted form of the error.
func TestTesterCKeyEchoedInRequestIDHeaderIsRedacted(t *testing.T) {
	for _, hdr := range []string{"X-Request-Id", "Request-Id", "Cf-Ray"} {
		t.Run(hdr, func(t *testing.T) {
			c, m := newMock(t)
			m.RegisterResponder("GET", testBase+"/teams/acme/virtual_machines/vm1/",
				func(r *http.Request) (*http.Response, error) {
					resp := httpmock.NewStringResponse(500, `"Internal Server Error"`)
					resp.Header.Set(hdr, "req-"+r.Header.Get("Authorization"))
					return resp, nil
				})
			_, err := c.GetVM(context.Background(), "vm1")
			require.Error(t, err)
			var ae *APIError
			require.True(t, errors.As(err, &ae))
			text := fmt.Sprintf("%v %+v %#v %s", err, err, err, ae.RequestID)
			assert.NotContains(t, text, testKey[25:], "the key reached the error through %s: %v", hdr, err)
		})
	}
}
