package hotaisle

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/internal/api"
)

// APIError is a non-2xx answer of the Hot Aisle API. Its body is a bare
// message, sent either as a JSON string ("Unauthorized") or as plain text
// (swagger error schemas are {type: string}); both decode into Message.
//
// errors.Is(err, class) is true for the one fleet class that the client's
// error table assigns to (status, message, call kind), for example fleet.ErrNotFound for
// a 404. The API key never appears in any field: it is cut out of the body
// should the server ever echo it.
//
// A 3xx answer is an APIError too: the API never redirects, so the client
// follows no redirect (a DELETE re-sent as a GET would pass for success).
// Its Message says where it pointed, its class is fleet.ErrUnavailable (a
// front that redirects may have carried the request out first: a create
// answered so is looked up, a delete tried again until confirmed) and it
// unwraps to a *RedirectError.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the decoded body, trimmed; http.StatusText(Status) when the
	// body is empty or an HTML page.
	Message string
	// Body is the raw body (at most 16 MiB).
	Body []byte
	// RetryAfter is the parsed Retry-After header, 0 when absent.
	RetryAfter time.Duration
	// RequestID is the X-Request-Id (or Request-Id, or Cloudflare's CF-Ray)
	// header when sent, the API key cut out should it echo it.
	RequestID string
	// Method and Path are the call, Path relative to the base URL
	// ("/teams/acme/virtual_machines/"), without the query.
	Method, Path string

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

// Error returns "hotaisle: METHOD PATH: STATUS: MESSAGE", followed by
// " (request id ID)" when the API sent one.
func (e *APIError) Error() string {
	s := fmt.Sprintf("hotaisle: %s %s: %d: %s", e.Method, e.Path, e.Status, e.Message)
	if e.RequestID != "" {
		s += " (request id " + e.RequestID + ")"
	}
	return s
}

// invalidError is a request refused by the client before it is sent. It
// answers errors.Is(err, fleet.ErrInvalidRequest) without repeating that
// error's text.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return "hotaisle: invalid request: " + e.msg }
func (e *invalidError) Is(target error) bool { return target == fleet.ErrInvalidRequest }

// invalid returns a local validation error of class fleet.ErrInvalidRequest.
func invalid(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// DecodeError is a 2xx answer whose body is not what the endpoint promises:
// empty, not JSON, cut short, of another shape (an error message, {} or null
// where an object or a list should be), or an object without its name. After
// a provision or a reserve it means the server may exist. It answers no
// fleet error class.
type DecodeError = api.DecodeError

// TransportError is a failure to get any answer (connection refused or
// reset, DNS, TLS, timeout); it answers errors.Is(err, fleet.ErrUnavailable).
type TransportError = api.TransportError

// KeyError is a call refused before sending because the API key (trimmed)
// is empty or holds a character no header can carry, such as a line break
// inside it. It answers errors.Is for fleet.ErrUnauthorized and
// fleet.ErrNotSent and never quotes the key.
type KeyError = api.KeyError

// RedirectError is a 3xx answer, which the client never follows (the API
// does not redirect): it names the status and the location (the API key cut
// out), and nothing was sent there. The *APIError of a 3xx answer unwraps
// to it.
type RedirectError = api.RedirectError

// Is reports whether target is the fleet class of e.
func (e *APIError) Is(target error) bool { return e.class != nil && target == e.class }

// Class returns the fleet class of e (fleet.ErrNotFound, ...), or nil.
func (e *APIError) Class() error { return e.class }

// HTTPStatus returns Status (used by the retry policy).
func (e *APIError) HTTPStatus() int { return e.Status }

// RetryAfterDuration returns RetryAfter (honoured by the retry policy).
func (e *APIError) RetryAfterDuration() time.Duration { return e.RetryAfter }

// callKind tells apart the calls whose errors read differently.
type callKind int

const (
	anyCall    callKind = iota
	createCall          // POST .../virtual_machines/ or .../bare_metal/ (provision, reserve)
)

// classRule maps a status range, a call kind and a message pattern (a
// lower-case substring; "" matches any message) to a fleet class.
type classRule struct {
	lo, hi  int
	kind    callKind
	pattern string
	class   error
}

// classTable is the only place that reads Hot Aisle error text. The first
// matching row wins. Sources: the responses and descriptions of Hot Aisle's
// OpenAPI document, and the error bodies its API was seen to answer.
var classTable = []classRule{
	// A redirect: the API never sends one (a wrong base URL, a proxy). A
	// front on the way may have carried the request out before redirecting,
	// so its effect is unknown: a create is looked up, a delete retried.
	{300, 399, anyCall, "", fleet.ErrUnavailable},
	// VM limit answers 401 (sic): "Maximum VMs already provisioned for this team".
	{401, 401, anyCall, "maximum vms", fleet.ErrQuotaExceeded},
	{401, 401, anyCall, "", fleet.ErrUnauthorized},
	// "Insufficient balance to provision virtual machine".
	{402, 402, anyCall, "", fleet.ErrInsufficientBalance},
	// Bare-metal reserve: "tenant limit exceeded or insufficient permissions".
	{403, 403, anyCall, "tenant limit", fleet.ErrQuotaExceeded},
	{403, 403, anyCall, "", fleet.ErrForbidden},
	// "No available virtual machine matching requested specifications",
	// "no available servers matching specifications".
	{404, 404, createCall, "no available", fleet.ErrNoCapacity},
	{404, 404, anyCall, "", fleet.ErrNotFound},
	// "server cannot be released due to minimum usage requirement".
	{400, 400, anyCall, "minimum usage", fleet.ErrMinReservation},
	{400, 400, anyCall, "minimum reservation", fleet.ErrMinReservation},
	// 409 "Conflict - key already registered": AddSSHKey turns it into
	// success; anywhere else repeating the request cannot help.
	{409, 409, anyCall, "", fleet.ErrInvalidRequest},
	{429, 429, anyCall, "", fleet.ErrRateLimited},
	// Other 400 ("invalid specifications or insufficient resources"), 422 and
	// any other 4xx: the request itself was refused.
	{400, 499, anyCall, "", fleet.ErrInvalidRequest},
	{500, 599, anyCall, "", fleet.ErrUnavailable},
}

// classify returns the class of (status, message) for a call of kind k.
func classify(status int, message string, k callKind) error {
	if i := matchRule(status, message, k); i >= 0 {
		return classTable[i].class
	}
	return nil
}

// matchRule returns the index of the first classTable row matching, or -1.
func matchRule(status int, message string, k callKind) int {
	msg := strings.ToLower(message)
	for i, r := range classTable {
		if status < r.lo || status > r.hi || (r.kind != anyCall && r.kind != k) {
			continue
		}
		if strings.Contains(msg, r.pattern) {
			return i
		}
	}
	return -1
}

// kindOf recognises provision (POST /teams/{t}/virtual_machines/) and reserve
// (POST /teams/{t}/bare_metal/).
func kindOf(method, path string) callKind {
	if method == http.MethodPost && strings.HasPrefix(path, "/teams/") &&
		(strings.HasSuffix(path, "/virtual_machines/") || strings.HasSuffix(path, "/bare_metal/")) &&
		strings.Count(path, "/") == 4 {
		return createCall
	}
	return anyCall
}

// maxMessage bounds Message (in bytes); Body keeps everything.
const maxMessage = 1024

// parseError builds the *APIError of a non-2xx answer, cutting key out.
func parseError(r *api.Response, key string) error {
	body := redact(r.Body, key)
	msg := decodeMessage(body, r.Status)
	if r.Redirect != nil {
		msg = r.Redirect.Reason()
	}
	return &APIError{
		Status: r.Status, Message: msg, Body: body, RetryAfter: r.RetryAfter,
		RequestID: api.RequestID(r.Header, hotaisleSecrets(key)), Method: r.Method, Path: r.Path,
		class: classify(r.Status, msg, kindOf(r.Method, r.Path)), redirect: r.Redirect,
	}
}

// decodeMessage reads a body that is a JSON string, a JSON object with a
// message-like field, or plain text.
func decodeMessage(body []byte, status int) string {
	text := strings.TrimSpace(string(body))
	var s string
	if json.Unmarshal(body, &s) == nil {
		text = strings.TrimSpace(s)
	} else if strings.HasPrefix(text, "{") {
		var o struct{ Message, Error, Detail string }
		if json.Unmarshal(body, &o) == nil {
			text = strings.TrimSpace(o.Message + o.Error + o.Detail)
		}
	}
	if text == "" || strings.HasPrefix(text, "<") || !utf8.ValidString(text) {
		return http.StatusText(status)
	}
	if len(text) > maxMessage {
		text = strings.ToValidUTF8(text[:maxMessage], "") + "…"
	}
	return text
}

// redact replaces every occurrence of the key (and of its secret part after
// the ".") in b.
func redact(b []byte, key string) []byte {
	return api.RedactBody(b, hotaisleSecrets(key))
}

// hotaisleSecrets are the forms of a key cut out of answers: the key as
// given and trimmed, and its secret part (what follows the ".").
func hotaisleSecrets(key string) []string {
	keys := api.Secrets(key)
	if s := secretPart(strings.TrimSpace(key)); len(s) >= api.MinRedactLen {
		keys = append(keys, s)
	}
	return keys
}

// secretPart returns what follows the "." of a "<prefix>.<secret>" key.
func secretPart(key string) string {
	if i := strings.IndexByte(key, '.'); i >= 0 {
		return key[i+1:]
	}
	return ""
}

// notSentError is an error of a call given up before its request was
// sent: it answers errors.Is for fleet.ErrNotSent without repeating the
// "gpufleet: " prefix in its text.
type notSentError struct{ err error }

func (e *notSentError) Error() string   { return e.err.Error() + " (request not sent)" }
func (e *notSentError) Unwrap() []error { return []error{e.err, fleet.ErrNotSent} }

// notSent marks err as that of a request never sent (fleet.ErrNotSent).
func notSent(err error) error { return &notSentError{err: err} }
