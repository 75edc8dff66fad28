package hotaisle

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var allClasses = []error{fleet.ErrNotFound, fleet.ErrUnauthorized, fleet.ErrForbidden,
	fleet.ErrRateLimited, fleet.ErrLocked, fleet.ErrNotActive, fleet.ErrMinReservation,
	fleet.ErrNoCapacity, fleet.ErrVPCUnsupported, fleet.ErrVPCInUse, fleet.ErrAttachFailed,
	fleet.ErrInsufficientBalance, fleet.ErrQuotaExceeded, fleet.ErrInvalidRequest, fleet.ErrUnavailable}

// classCases are real Hot Aisle answers (hotaisle.md sections 2 and 6, the
// swagger responses), sent through a real call, one or more per table row.
var classCases = []struct {
	name         string
	method, path string // path under /api
	status       int
	body         string
	want         error
}{
	{"redirect on a delete", "DELETE", "/teams/acme/virtual_machines/vm1/", 302, "", fleet.ErrUnavailable},
	{"redirect on a provision", "POST", "/teams/acme/virtual_machines/", 307, `"No available virtual machine"`, fleet.ErrUnavailable},
	{"permanent redirect on a read", "GET", "/teams/acme/virtual_machines/vm1/", 308, `"Not Found"`, fleet.ErrUnavailable},
	{"see other on a release", "DELETE", "/teams/acme/bare_metal/bm1/", 303, "", fleet.ErrUnavailable},
	{"vm limit", "POST", "/teams/acme/virtual_machines/", 401, `"Maximum VMs already provisioned for this team"`, fleet.ErrQuotaExceeded},
	{"bad key json", "GET", "/user/", 401, `"Unauthorized"`, fleet.ErrUnauthorized},
	{"bad key plain", "GET", "/user/", 401, "Unauthorized\n", fleet.ErrUnauthorized},
	{"no balance", "POST", "/teams/acme/virtual_machines/", 402, `"Insufficient balance to provision virtual machine"`, fleet.ErrInsufficientBalance},
	{"tenant limit", "POST", "/teams/acme/bare_metal/", 403, `"tenant limit exceeded"`, fleet.ErrQuotaExceeded},
	{"forbidden", "DELETE", "/teams/acme/virtual_machines/vm1/", 403, `"Forbidden: Permission denied"`, fleet.ErrForbidden},
	{"not contact owner", "POST", "/user/ssh_keys/", 403, "not a contact owner", fleet.ErrForbidden},
	{"vm sold out", "POST", "/teams/acme/virtual_machines/", 404, `"No available virtual machine matching requested specifications"`, fleet.ErrNoCapacity},
	{"bm sold out", "POST", "/teams/acme/bare_metal/", 404, "no available servers matching specifications", fleet.ErrNoCapacity},
	{"unknown vm", "GET", "/teams/acme/virtual_machines/vm1/", 404, `"Not Found: Resource not found"`, fleet.ErrNotFound},
	{"no available on a GET is not capacity", "GET", "/teams/acme/virtual_machines/vm1/", 404, `"No available thing"`, fleet.ErrNotFound},
	{"unknown team on provision", "POST", "/teams/acme/virtual_machines/", 404, `"Not Found: Resource not found"`, fleet.ErrNotFound},
	{"server gone", "DELETE", "/teams/acme/bare_metal/bm1/", 404, "server not found or not assigned to team", fleet.ErrNotFound},
	{"bm minimum", "DELETE", "/teams/acme/bare_metal/bm1/", 400, `"server cannot be released due to minimum usage requirement"`, fleet.ErrMinReservation},
	{"vm minimum", "DELETE", "/teams/acme/virtual_machines/vm1/", 400, `"VM cannot be deleted before the minimum reservation period"`, fleet.ErrMinReservation},
	{"key conflict elsewhere", "PATCH", "/teams/acme/virtual_machines/vm1/", 409, `"Conflict"`, fleet.ErrInvalidRequest},
	{"rate limited", "GET", "/teams/acme/virtual_machines/", 429, ``, fleet.ErrRateLimited},
	{"bad request", "POST", "/teams/acme/bare_metal/", 400, `"invalid specifications or insufficient resources"`, fleet.ErrInvalidRequest},
	{"unprocessable", "POST", "/user/ssh_keys/", 422, `"Unprocessable Entity: Invalid data format"`, fleet.ErrInvalidRequest},
	{"payload too large", "POST", "/teams/acme/virtual_machines/", 413, "Request body too large.", fleet.ErrInvalidRequest},
	{"internal", "POST", "/teams/acme/virtual_machines/", 500, `"Internal Server Error"`, fleet.ErrUnavailable},
	{"bad gateway html", "GET", "/teams/acme/virtual_machines/", 502, "<html><body>502 Bad Gateway</body></html>", fleet.ErrUnavailable},
}

func TestClassTableEveryRowIsExercised(t *testing.T) {
	hit := make([]bool, len(classTable))
	for _, tc := range classCases {
		msg := decodeMessage([]byte(tc.body), tc.status)
		i := matchRule(tc.status, msg, kindOf(tc.method, tc.path))
		require.GreaterOrEqual(t, i, 0, tc.name)
		hit[i] = true
	}
	for i, ok := range hit {
		assert.True(t, ok, "classTable row %d (%d-%d %q) has no test case", i,
			classTable[i].lo, classTable[i].hi, classTable[i].pattern)
	}
}

func TestClassificationThroughRealCalls(t *testing.T) {
	for _, tc := range classCases {
		t.Run(tc.name, func(t *testing.T) {
			c, m := newMock(t, WithRetry(1, 0, 0))
			m.on(tc.method, tc.path, tc.status, tc.body, "X-Request-Id", "req-42")
			_, err := c.api.Do(context.Background(), apiReq(tc.method, tc.path), nil)
			var ae *APIError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tc.status, ae.Status)
			assert.Equal(t, tc.method, ae.Method)
			assert.Equal(t, tc.path, ae.Path)
			assert.Equal(t, []byte(tc.body), ae.Body)
			assert.Equal(t, "req-42", ae.RequestID)
			assert.NotEmpty(t, ae.Message)
			for _, class := range allClasses {
				assert.Equal(t, class == tc.want, errors.Is(err, class), "%v", class)
			}
		})
	}
}

func TestMessageFromJSONStringOrPlainText(t *testing.T) {
	for body, want := range map[string]string{
		`"Unauthorized"`:                  "Unauthorized",
		"Unauthorized\n":                  "Unauthorized",
		`"Not Found: Resource not found"`: "Not Found: Resource not found",
		"  plain text with spaces \n":     "plain text with spaces",
		`{"message":"object form"}`:       "object form",
		`{"error":"other form"}`:          "other form",
		``:                                "Bad Request",
		`""`:                              "Bad Request",
		"<html>oops</html>":               "Bad Request",
	} {
		assert.Equal(t, want, decodeMessage([]byte(body), 400), "%q", body)
	}
	long := decodeMessage([]byte(strings.Repeat("é", 3000)), 500)
	assert.LessOrEqual(t, len(long), maxMessage+len("…"))
	assert.True(t, utf8.ValidString(long))
}

func TestAPIErrorCarriesRetryAfterAndFormats(t *testing.T) {
	c, m := newMock(t, WithRetry(1, 0, 0))
	m.on("GET", "/teams/acme/virtual_machines/", 429, `"Too Many Requests"`, "Retry-After", "7")
	_, err := c.ListVMs(context.Background())
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 7*time.Second, ae.RetryAfter)
	assert.Equal(t, 7*time.Second, ae.RetryAfterDuration())
	assert.Equal(t, 429, ae.HTTPStatus())
	assert.Equal(t, fleet.ErrRateLimited, ae.Class())
	assert.Equal(t, "hotaisle: GET /teams/acme/virtual_machines/: 429: Too Many Requests", ae.Error())
}

func TestKindOfRecognisesOnlyCreates(t *testing.T) {
	assert.Equal(t, createCall, kindOf(http.MethodPost, "/teams/acme/virtual_machines/"))
	assert.Equal(t, createCall, kindOf(http.MethodPost, "/teams/acme/bare_metal/"))
	assert.Equal(t, anyCall, kindOf(http.MethodGet, "/teams/acme/virtual_machines/"))
	assert.Equal(t, anyCall, kindOf(http.MethodPost, "/teams/acme/virtual_machines/vm1/start/"))
	assert.Equal(t, anyCall, kindOf(http.MethodPost, "/user/ssh_keys/"))
}
