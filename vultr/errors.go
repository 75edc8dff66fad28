package vultr

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/internal/api"
)

// ErrEndlessList is yielded (after the items already read) by a list cut
// short because its pages would not end. Before following a next cursor,
// every list stops when: the cursor was followed before (ErrRepeatedCursor
// too); the page just read is empty; the items read exceed the largest
// meta.total seen by more than one page (the slack lets servers created
// during the listing through; a meta.total of 0 is taken as unknown); or
// MaxListPages pages have been read.
var ErrEndlessList = errors.New("vultr: list does not end")

// ErrRepeatedCursor is yielded by a list whose meta.links.next cursor repeats
// one already followed: the listing would otherwise never end. It also
// answers errors.Is(err, ErrEndlessList).
var ErrRepeatedCursor = fmt.Errorf("%w: cursor repeated", ErrEndlessList)

// APIError is a non-2xx answer of the Vultr API. Vultr writes
// {"error":"<message>","status":<code>}; a body that is not that JSON is kept
// whole (trimmed) as Message.
//
// A 3xx answer is an APIError too: the API never redirects, so the client
// follows no redirect (a DELETE re-sent as a GET would pass for success).
// Its Message says where it pointed, its class is fleet.ErrUnavailable (a
// front that redirects may have carried the request out first: a create
// answered so is looked up, a delete tried again until confirmed) and it
// unwraps to a *RedirectError.
//
// errors.Is(err, class) is true for exactly one class of package fleet,
// chosen by the classification table of this file (see Class).
//
// The API key never appears in any field, so in no formatted form either:
// should the server echo it (even JSON-escaped), it is replaced by
// "[redacted]" before the error is built.
type APIError struct {
	Status     int           // HTTP status code
	Message    string        // the "error" attribute, or the raw text
	Body       []byte        // the raw response body (at most 16 MiB)
	RetryAfter time.Duration // the Retry-After header, 0 when absent
	RequestID  string        // X-Request-Id (or Request-Id, or CF-Ray) header, key cut out
	Method     string        // request method
	Path       string        // request path, without query

	class    error
	redirect *RedirectError
}

// Unwrap returns the *RedirectError of a 3xx answer, else nil.
func (e *APIError) Unwrap() error {
	if e.redirect == nil {
		return nil
	}
	return e.redirect
}

// Error shows method, path, status and message, then the request id when
// the API sent one: "vultr: DELETE /v2/instances/ID: 500: Server is
// currently locked (request id 3f2a...)". Never headers.
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if len(msg) > maxErrorText {
		msg = strings.ToValidUTF8(msg[:maxErrorText], "") + "…"
	}
	s := fmt.Sprintf("vultr: %s %s: %d: %s", e.Method, e.Path, e.Status, msg)
	if e.RequestID != "" {
		s += " (request id " + e.RequestID + ")"
	}
	return s
}

// maxErrorText bounds the message shown by Error (an HTML error page from a
// proxy can be long); Message and Body keep everything.
const maxErrorText = 300

// Class returns the fleet error class of e (fleet.ErrNotFound, ...).
func (e *APIError) Class() error {
	if e.class != nil {
		return e.class
	}
	return classify(e.Status, e.Message) // an APIError built by hand
}

// Is reports whether target is e's fleet class.
func (e *APIError) Is(target error) bool { return target == e.Class() }

// HTTPStatus returns Status (used by the retry logic).
func (e *APIError) HTTPStatus() int { return e.Status }

// RetryAfterDuration returns RetryAfter (used by the retry logic).
func (e *APIError) RetryAfterDuration() time.Duration { return e.RetryAfter }

// rule is one row of the classification table: a status (0: any) and a
// case-insensitive message substring ("": any) select a class.
type rule struct {
	status   int
	contains string
	class    error
}

// classTable is the only place where Vultr error text is compared. Rows are
// tried in order; the first match wins. Sources: Vultr's API reference,
// the error bodies quoted in public issue threads of its users (dstack,
// Terraform, Ansible) and the answers of its API as observed (Vultr answers
// most domain refusals with 500, so message rows come before status rows).
var classTable = []rule{
	// "Unable to destroy server: Server is already pending destruction" (400
	// or 500) on a repeated DELETE; "Server is pending destruction" on a read
	// right after one: the delete is under way, wait for the 404.
	{0, "pending destruction", fleet.ErrDeletePending},
	{0, "server is currently locked", fleet.ErrLocked},                  // DELETE/reinstall, 500
	{0, "not currently active", fleet.ErrNotActive},                     // DELETE while pending, 500
	{0, "does not support private networking", fleet.ErrVPCUnsupported}, // attach on vbm-4c-32gb
	// "The VPC network is already attached to this server." (attach, 400):
	// before the in-use row, which a wording ending "to this VPC network"
	// would also match.
	{0, "already attached to this", fleet.ErrAlreadyAttached},
	{0, "attached to this vpc network", fleet.ErrVPCInUse},           // DELETE /vpcs/{id}, 400
	{0, "unable to attach vpc", fleet.ErrAttachFailed},               // attach flake, 500
	{0, "not available in the selected region", fleet.ErrNoCapacity}, // create, 400
	{0, "sold out", fleet.ErrNoCapacity},
	{0, "out of stock", fleet.ErrNoCapacity},
	{0, "insufficient capacity", fleet.ErrNoCapacity},
	{0, "no capacity", fleet.ErrNoCapacity},
	{0, "invalid instance-id", fleet.ErrNotFound}, // GET …/vpcs of a gone server, 404
	{0, "invalid instance id", fleet.ErrNotFound}, // 400 for a server deleted in the console
	// "You have reached the maximum number of active virtual machines for
	// this account" (create).
	{0, "maximum number of active", fleet.ErrQuotaExceeded},
	// "Server add failed: You have reached the maximum monthly fee limit for
	// this account. To deploy additional services, please request a limit
	// increase." (create, 400): the account's spending cap.
	{0, "maximum monthly fee limit", fleet.ErrQuotaExceeded},
	{0, "invalid server", fleet.ErrNotFound}, // GET gone bare metal
	{0, "invalid vpc id", fleet.ErrNotFound}, // GET/DELETE unknown VPC
	{0, "invalid private network id", fleet.ErrNotFound},
	{0, "instance not found", fleet.ErrNotFound},
	{0, "not found.", fleet.ErrNotFound},
	{400, "invalid plan chosen", fleet.ErrInvalidRequest},
	{http.StatusUnauthorized, "", fleet.ErrUnauthorized},
	{http.StatusForbidden, "", fleet.ErrForbidden},
	{http.StatusNotFound, "", fleet.ErrNotFound},
	{http.StatusTooManyRequests, "", fleet.ErrRateLimited},
}

// classify picks the fleet class of a (status, message) answer:
// ErrUnavailable for a 3xx (a redirect, which the API never sends: a front
// on the way may have carried the request out before redirecting, so its
// effect is unknown, whatever the body says), else the first
// matching row of classTable, else ErrInvalidRequest for any other 4xx and
// ErrUnavailable for any other status (5xx without a domain message).
func classify(status int, msg string) error {
	if api.IsRedirect(status) {
		return fleet.ErrUnavailable
	}
	lower := strings.ToLower(msg)
	for _, r := range classTable {
		if (r.status == 0 || r.status == status) && strings.Contains(lower, r.contains) {
			return r.class
		}
	}
	if status >= 400 && status < 500 {
		return fleet.ErrInvalidRequest
	}
	return fleet.ErrUnavailable
}

// parseError turns a non-2xx answer into an *APIError, with every form of
// key (the API key) cut out of Body, Message, RequestID and Path first (see
// api.RedactBody and api.RequestID; keys under api.MinRedactLen bytes are
// not searched).
func parseError(r *api.Response, key string) error {
	keys := api.Secrets(key)
	body := api.RedactBody(r.Body, keys)
	e := &APIError{Status: r.Status, Body: body, RetryAfter: r.RetryAfter,
		RequestID: api.RequestID(r.Header, keys), Method: r.Method,
		Path: api.RedactString(r.Path, keys)}
	var msg struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(body, &msg); err == nil && msg.Error != nil {
		e.Message = *msg.Error
	} else {
		e.Message = strings.TrimSpace(string(body))
	}
	e.Message = api.RedactString(e.Message, keys)
	if r.Redirect != nil {
		e.redirect, e.Message = r.Redirect, r.Redirect.Reason()
	}
	e.class = classify(e.Status, e.Message)
	return e
}

// invalidError is a request refused by the client before it is sent. It
// answers errors.Is(err, fleet.ErrInvalidRequest) without repeating that
// error's text.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return "vultr: invalid request: " + e.msg }
func (e *invalidError) Is(target error) bool { return target == fleet.ErrInvalidRequest }

// invalid returns a local validation error of class fleet.ErrInvalidRequest,
// for a request refused before it is sent.
func invalid(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// requireID refuses an empty id before it turns a GET of one resource into
// a GET of the collection.
func requireID(kind, id string) error {
	if strings.TrimSpace(id) == "" {
		return invalid("empty %s id", kind)
	}
	return nil
}

// DecodeError is a 2xx answer whose body is not the JSON expected, or lacks
// the object it should carry. After a create it means the server may exist.
type DecodeError = api.DecodeError

// TransportError is a failure to get any answer (connection refused or
// reset, DNS, TLS, timeout); it answers errors.Is(err, fleet.ErrUnavailable).
type TransportError = api.TransportError

// KeyError is a call refused before sending because the API key (trimmed)
// holds a character no header can carry, such as a line break inside it.
// It answers errors.Is for fleet.ErrUnauthorized and fleet.ErrNotSent and
// never quotes the key. An empty key is not a KeyError: the calls are sent
// without an Authorization header (the plan and region lists need none; the
// others answer 401, fleet.ErrUnauthorized).
type KeyError = api.KeyError

// RedirectError is a 3xx answer, which the client never follows (the API
// does not redirect): it names the status and the location (the API key cut
// out), and nothing was sent there. The *APIError of a 3xx answer unwraps
// to it.
type RedirectError = api.RedirectError
