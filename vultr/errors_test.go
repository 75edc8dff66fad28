package vultr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/internal/api"
	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var allClasses = []error{fleet.ErrNotFound, fleet.ErrUnauthorized, fleet.ErrForbidden,
	fleet.ErrRateLimited, fleet.ErrLocked, fleet.ErrNotActive, fleet.ErrMinReservation,
	fleet.ErrNoCapacity, fleet.ErrVPCUnsupported, fleet.ErrVPCInUse, fleet.ErrAttachFailed,
	fleet.ErrInsufficientBalance, fleet.ErrQuotaExceeded, fleet.ErrInvalidRequest, fleet.ErrUnavailable,
	fleet.ErrDeletePending, fleet.ErrAlreadyAttached}

// Real error bodies from /shared/api/vultr.md §1, §4 and §7.10 (statuses as
// recorded there; where the status is unknown, the one the sim uses).
var classCases = []struct {
	name   string
	status int
	body   string
	class  error
}{
	{"locked delete", 500, `{"error":"Unable to destroy server: Unable to remove VM: Server is currently locked","status":500}`, fleet.ErrLocked},
	{"locked reinstall", 500, `{"error":"Unable to reinstall server: Server is currently locked","status":500}`, fleet.ErrLocked},
	{"not active", 500, `{"error":"Unable to destroy server: This subscription is not currently active, you cannot destroy it.","status":500}`, fleet.ErrNotActive},
	{"vpc unsupported", 400, `{"error":"This plan does not support private networking.","status":400}`, fleet.ErrVPCUnsupported},
	{"vpc unsupported lower", 500, `{"error":"plan does not support private networking","status":500}`, fleet.ErrVPCUnsupported},
	{"vpc in use", 400, `{"error":"The following servers are attached to this VPC network: b3e1c0a2-5d4f-4e21-8c77-2f0a9d6e4b11","status":400}`, fleet.ErrVPCInUse},
	{"already attached", 400, `{"error":"The VPC network is already attached to this server.","status":400}`, fleet.ErrAlreadyAttached},
	{"already attached, VPC wording", 400, `{"error":"Server is already attached to this VPC network.","status":400}`, fleet.ErrAlreadyAttached},
	{"floating IP on another server", 400, `{"error":"Floating IPv4 address is already attached to another server","status":400}`, fleet.ErrInvalidRequest},
	{"attach flake", 500, `{"error":"Unable to attach VPC","status":500}`, fleet.ErrAttachFailed},
	{"no capacity sim", 400, `{"error":"Plan is not available in the selected region.","status":400}`, fleet.ErrNoCapacity},
	{"sold out", 400, `{"error":"This plan is sold out in the selected location.","status":400}`, fleet.ErrNoCapacity},
	{"out of stock", 400, `{"error":"Plan out of stock.","status":400}`, fleet.ErrNoCapacity},
	{"insufficient capacity", 500, `{"error":"Insufficient capacity to deploy.","status":500}`, fleet.ErrNoCapacity},
	{"no capacity", 400, `{"error":"No capacity available for this plan.","status":400}`, fleet.ErrNoCapacity},
	{"pending destruction 400", 400, `{"error":"Unable to destroy server: Server is already pending destruction","status":400}`, fleet.ErrDeletePending},
	{"pending destruction 500", 500, `{"error":"Unable to destroy server: Server is already pending destruction","status":500}`, fleet.ErrDeletePending},
	{"pending destruction on read", 400, `{"error":"Server is pending destruction","status":400}`, fleet.ErrDeletePending},
	{"invalid instance ID console-deleted", 400, `{"error":"invalid instance ID","status":400}`, fleet.ErrNotFound},
	{"invalid instance ID 404", 404, `{"error":"Invalid instance ID.","status":404}`, fleet.ErrNotFound},
	{"instance limit", 400, `{"error":"You have reached the maximum number of active virtual machines for this account. For security reasons, please contact our support team to have the limit raised","status":400}`, fleet.ErrQuotaExceeded},
	{"server limit 500", 500, `{"error":"Server add failed: You have reached the maximum number of active servers for this account.","status":500}`, fleet.ErrQuotaExceeded},
	{"monthly fee limit", 400, `{"error":"Server add failed: You have reached the maximum monthly fee limit for this account. To deploy additional services, please request a limit increase.","status":400}`, fleet.ErrQuotaExceeded},
	{"unknown limit wording falls through", 400, `{"error":"Account limit hit.","status":400}`, fleet.ErrInvalidRequest},
	{"invalid instance-id", 404, `{"error":"Invalid instance-id.","status":404}`, fleet.ErrNotFound},
	{"invalid instance-id as 400", 400, `{"error":"Invalid instance-id.","status":400}`, fleet.ErrNotFound},
	{"invalid server", 400, `{"error":"Invalid server.","status":400}`, fleet.ErrNotFound},
	{"invalid vpc", 404, `{"error":"Invalid VPC ID.","status":404}`, fleet.ErrNotFound},
	{"invalid private network", 404, `{"error":"Invalid private network ID.","status":404}`, fleet.ErrNotFound},
	{"unknown ssh key", 404, `{"error":"Invalid ssh key.","status":404}`, fleet.ErrNotFound},
	{"malformed ssh key", 400, `{"error":"Invalid SSH key.","status":400}`, fleet.ErrInvalidRequest},
	{"plan not offered in region", 400, `{"error":"Plan is not offered in the selected region.","status":400}`, fleet.ErrInvalidRequest},
	{"instance not found", 500, `{"error":"instance not found","status":500}`, fleet.ErrNotFound},
	{"not found dot", 400, `{"error":"Not found.","status":400}`, fleet.ErrNotFound},
	{"plain 404", 404, `{"error":"","status":404}`, fleet.ErrNotFound},
	{"invalid plan", 400, `{"error":"Invalid plan chosen.","status":400}`, fleet.ErrInvalidRequest},
	{"bad request", 400, `{"error":"Bad request.","status":400}`, fleet.ErrInvalidRequest},
	{"unprocessable", 422, `{"error":"Invalid region.","status":422}`, fleet.ErrInvalidRequest},
	{"unauthorized", 401, `{"error":"Invalid API token.","status":401}`, fleet.ErrUnauthorized},
	{"forbidden", 403, `{"error":"Unauthorized IP address: 203.0.113.9","status":403}`, fleet.ErrForbidden},
	{"rate limited", 429, `{"error":"Rate limit reached - please try your request again later.","status":429}`, fleet.ErrRateLimited},
	{"bad gateway html", 502, `<html><body>502 Bad Gateway</body></html>`, fleet.ErrUnavailable},
	{"unavailable", 503, `{"error":"Service Unavailable","status":503}`, fleet.ErrUnavailable},
	{"gateway timeout empty", 504, ``, fleet.ErrUnavailable},
	{"other 500", 500, `{"error":"Unable to destroy server: internal error","status":500}`, fleet.ErrUnavailable},
	// Redirects: the API never sends one, whatever the body says.
	{"redirect html", 302, `<a href="/v2/instances/x/">Found</a>.`, fleet.ErrUnavailable},
	{"redirect with a domain message", 301, `{"error":"Server is currently locked","status":301}`, fleet.ErrUnavailable},
	{"see other empty", 303, ``, fleet.ErrUnavailable},
	{"temporary redirect not found", 307, `{"error":"Not found.","status":307}`, fleet.ErrUnavailable},
	{"permanent redirect", 308, ``, fleet.ErrUnavailable},
}

func TestClassificationTable(t *testing.T) {
	for _, tc := range classCases {
		t.Run(tc.name, func(t *testing.T) {
			err := parseError(&api.Response{Status: tc.status, Body: []byte(tc.body),
				Header: http.Header{}, Method: "DELETE", Path: "/v2/instances/x"}, "")
			var ae *APIError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tc.status, ae.Status)
			for _, class := range allClasses {
				assert.Equal(t, class == tc.class, errors.Is(err, class), "class %v", class)
			}
			assert.Equal(t, tc.class, ae.Class())
		})
	}
}

// Every row of classTable is exercised by at least one real body above.
func TestEveryTableRowIsCovered(t *testing.T) {
	for _, r := range classTable {
		covered := false
		for _, tc := range classCases {
			if (r.status == 0 || r.status == tc.status) &&
				strings.Contains(strings.ToLower(tc.body), r.contains) && tc.class == r.class {
				covered = true
			}
		}
		assert.True(t, covered, "row %+v has no case", r)
	}
}

func TestAPIErrorFields(t *testing.T) {
	h := http.Header{}
	h.Set("X-Request-Id", "req-42")
	h.Set("Authorization", "Bearer must-not-show")
	err := parseError(&api.Response{Status: 429, Body: []byte(`{"error":"Rate limit reached","status":429}`),
		Header: h, RetryAfter: 2e9, Method: "GET", Path: "/v2/instances"}, "")
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "Rate limit reached", ae.Message)
	assert.Equal(t, "req-42", ae.RequestID)
	assert.Equal(t, int64(2e9), int64(ae.RetryAfter))
	assert.Equal(t, 429, ae.HTTPStatus())
	assert.Equal(t, ae.RetryAfter, ae.RetryAfterDuration())
	assert.Equal(t, "vultr: GET /v2/instances: 429: Rate limit reached (request id req-42)", ae.Error())
	assert.NotContains(t, ae.Error(), "must-not-show")
}

func TestNonJSONBodyIsTheMessage(t *testing.T) {
	err := parseError(&api.Response{Status: 502, Body: []byte("  Bad Gateway\n"), Header: http.Header{},
		Method: "GET", Path: "/v2/plans"}, "")
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "Bad Gateway", ae.Message)
	assert.Equal(t, []byte("  Bad Gateway\n"), ae.Body)
	assert.ErrorIs(t, err, fleet.ErrUnavailable)

	empty := parseError(&api.Response{Status: 503, Header: http.Header{}, Method: "GET", Path: "/v2/plans"}, "")
	assert.Equal(t, "vultr: GET /v2/plans: 503: Service Unavailable", empty.Error(), "no request id, no suffix")

	long := parseError(&api.Response{Status: 500, Body: []byte(strings.Repeat("x", 5000)), Header: http.Header{}}, "")
	assert.Less(t, len(long.Error()), 400, "Error() is bounded")
	assert.Len(t, long.(*APIError).Message, 5000, "Message keeps everything")
}

func TestLocalValidationIsInvalidRequest(t *testing.T) {
	c, mt := mockClient(t)
	sent := 0
	mt.RegisterNoResponder(func(*http.Request) (*http.Response, error) { sent++; return nil, errors.New("unexpected") })
	ctx := t.Context()
	_, err := c.CreateInstance(ctx, &InstanceCreate{Region: "ewr", Plan: "p"})
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest, "no boot source")
	_, err = c.CreateInstance(ctx, &InstanceCreate{Region: "ewr", Plan: "p", OSID: 1, ImageID: "docker"})
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest, "two boot sources")
	_, err = c.CreateBareMetal(ctx, &BareMetalCreate{Plan: "p", OSID: 1})
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest, "no region")
	_, err = c.GetInstance(ctx, "")
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest)
	_, err = c.CreateVPC(ctx, &VPCCreate{Region: "ewr", V4Subnet: "10.0.0.0"})
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest, "subnet without mask")
	assert.ErrorIs(t, c.AttachInstanceVPC(ctx, "i", ""), fleet.ErrInvalidRequest)
	_, err = Collect(c.ListBareMetalVPCs(ctx, ""))
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest)
	assert.Zero(t, sent, "nothing was sent")
}

func TestHandBuiltAPIErrorIsClassified(t *testing.T) {
	err := error(&APIError{Status: 500, Message: "Server is currently locked"})
	assert.ErrorIs(t, err, fleet.ErrLocked)
}

// The request id is read from X-Request-Id, Request-Id or CF-Ray (the
// same helper as the Hot Aisle client's), the key cut out.
func TestParseErrorRedactsTheRequestID(t *testing.T) {
	for _, hdr := range []string{"X-Request-Id", "Request-Id", "Cf-Ray"} {
		h := http.Header{}
		h.Set(hdr, "id-Bearer "+testKey)
		err := parseError(&api.Response{Status: 502, Header: h, Method: "GET", Path: "/v2/plans"}, testKey)
		var ae *APIError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "id-Bearer "+api.Redacted, ae.RequestID, hdr)
		assert.NotContains(t, fmt.Sprintf("%v %+v %#v", err, err, err), testKey)
	}
}

// Through a real call: a request id echoing the key reaches no form of the
// error.
func TestRequestIDEchoingTheKeyThroughACall(t *testing.T) {
	for _, hdr := range []string{"X-Request-Id", "Request-Id", "Cf-Ray"} {
		c, mt := mockClient(t, WithRetry(1, 0, 0))
		mt.RegisterResponder("GET", testBase+"/v2/instances/i1", func(r *http.Request) (*http.Response, error) {
			resp := httpmock.NewStringResponse(500, `{"error":"boom","status":500}`)
			resp.Header.Set(hdr, "req-"+r.Header.Get("Authorization"))
			return resp, nil
		})
		_, err := c.GetInstance(context.Background(), "i1")
		var ae *APIError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "req-Bearer "+api.Redacted, ae.RequestID, hdr)
		assert.NotContains(t, fmt.Sprintf("%v %+v %#v", err, err, err), testKey)
	}
}
