package hotaisle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/api"
	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var requestIDHeaders = []string{"X-Request-Id", "Request-Id", "Cf-Ray"}

// A server (or a proxy in front of it) that echoes the Authorization header,
// or only the key's secret part, into its request-id header: APIError.RequestID
// and every formatted form of the error carry the id without the key.
func TestKeyEchoedInRequestIDHeaderIsRedacted(t *testing.T) {
	secret := testKey[strings.IndexByte(testKey, '.')+1:]
	for _, hdr := range requestIDHeaders {
		for _, echo := range []string{"Authorization", "secret part"} {
			t.Run(hdr+" "+echo, func(t *testing.T) {
				c, m := newMock(t)
				m.RegisterResponder("GET", testBase+"/teams/acme/virtual_machines/vm1/",
					func(r *http.Request) (*http.Response, error) {
						resp := httpmock.NewStringResponse(500, `"Internal Server Error"`)
						v := r.Header.Get("Authorization")
						if echo == "secret part" {
							v = secret
						}
						resp.Header.Set(hdr, "req-"+v)
						return resp, nil
					})
				_, err := c.GetVM(context.Background(), "vm1")
				var ae *APIError
				require.True(t, errors.As(err, &ae))
				text := fmt.Sprintf("%v %+v %#v %s", err, err, err, ae.RequestID)
				assert.NotContains(t, text, secret, "the key reached the error through %s: %v", hdr, err)
				assert.True(t, strings.HasPrefix(ae.RequestID, "req-"), ae.RequestID)
				assert.Contains(t, ae.RequestID, api.Redacted)
			})
		}
	}
}

// parseError itself redacts the request id (it does not count on the
// transport having done so).
func TestParseErrorRedactsTheRequestID(t *testing.T) {
	for _, hdr := range requestIDHeaders {
		h := http.Header{}
		h.Set(hdr, "id-"+testKey)
		err := parseError(&api.Response{Status: 502, Header: h, Method: "GET", Path: "/user/"}, testKey)
		var ae *APIError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "id-"+api.Redacted, ae.RequestID, hdr)
		assert.Equal(t, "hotaisle: GET /user/: 502: Bad Gateway (request id id-[redacted])", err.Error())
	}
}
