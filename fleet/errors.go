package fleet

import (
	"errors"
	"fmt"
	"strings"
)

// Error classes shared by every provider. A provider client returns its own
// typed error (for example *vultr.APIError or *hotaisle.APIError) that answers
// errors.Is for exactly one of these classes, so that callers and the Manager
// decide what to do without ever comparing error text. Each provider keeps the
// (status, message) patterns that select a class in a single table.
var (
	// ErrNotFound: the resource does not exist (HTTP 404, Vultr "Invalid
	// instance-id", Hot Aisle "Not Found"). For a delete it means "already gone".
	ErrNotFound = errors.New("gpufleet: not found")
	// ErrUnauthorized: the API key is missing or wrong (HTTP 401).
	ErrUnauthorized = errors.New("gpufleet: unauthorized")
	// ErrForbidden: the key is valid but lacks a permission or role (HTTP 403).
	ErrForbidden = errors.New("gpufleet: forbidden")
	// ErrRateLimited: the API refused the call for its rate (HTTP 429); the
	// typed error carries Retry-After when the API sent it.
	ErrRateLimited = errors.New("gpufleet: rate limited")
	// ErrLocked: Vultr "Server is currently locked" (HTTP 500), for minutes after
	// a server becomes active; every mutation is refused meanwhile. Wait and retry.
	ErrLocked = errors.New("gpufleet: server locked")
	// ErrNotActive: Vultr "This subscription is not currently active" (HTTP 500)
	// on a delete while the server is still pending. Wait and retry.
	ErrNotActive = errors.New("gpufleet: subscription not active")
	// ErrDeletePending: the provider accepted an earlier delete and is
	// destroying the server (Vultr "Server is already pending destruction",
	// HTTP 400 or 500, on a repeated DELETE or a read right after one). The
	// delete needs no repeating: wait for the server to be gone (ErrNotFound,
	// HTTP 404).
	ErrDeletePending = errors.New("gpufleet: delete pending")
	// ErrMinReservation: Hot Aisle refused a release before the minimum
	// reservation (HTTP 400 "minimum usage requirement"); release with force, or
	// wait until the reservation ends.
	ErrMinReservation = errors.New("gpufleet: minimum reservation not met")
	// ErrNoCapacity: the offer is sold out (Vultr 400 on create, Hot Aisle 404
	// "No available virtual machine matching requested specifications").
	ErrNoCapacity = errors.New("gpufleet: no capacity")
	// ErrVPCUnsupported: Vultr "This plan does not support private networking".
	ErrVPCUnsupported = errors.New("gpufleet: plan does not support VPC")
	// ErrVPCInUse: Vultr "The following servers are attached to this VPC network".
	ErrVPCInUse = errors.New("gpufleet: VPC in use")
	// ErrAttachFailed: Vultr "Unable to attach VPC" (HTTP 500), intermittent.
	ErrAttachFailed = errors.New("gpufleet: VPC attach failed")
	// ErrAlreadyAttached: the server is already in the VPC an attach names
	// (for example after an attach that took effect but answered 500): the
	// attach is done. Vultr's wording is not documented; the client takes an
	// HTTP 400 whose message contains "already attached to this" for it (the
	// sim answers "The VPC network is already attached to this server").
	ErrAlreadyAttached = errors.New("gpufleet: VPC already attached")
	// ErrInsufficientBalance: the account cannot pay (Hot Aisle HTTP 402).
	ErrInsufficientBalance = errors.New("gpufleet: insufficient balance")
	// ErrQuotaExceeded: an account limit was reached (Hot Aisle "Maximum VMs
	// already provisioned for this team", HTTP 401; tenant limit, HTTP 403).
	ErrQuotaExceeded = errors.New("gpufleet: quota exceeded")
	// ErrInvalidRequest: the API rejected the request itself (other HTTP 400
	// and 422 answers: unknown plan, missing region, malformed spec).
	ErrInvalidRequest = errors.New("gpufleet: invalid request")
	// ErrUnavailable: a transient server-side failure (HTTP 502, 503, 504, other
	// 5xx, connection reset), or a 3xx answer (a redirect, never followed: its
	// effect is unknown), that is safe to retry for idempotent calls; a
	// create that answers it is looked up, not taken as refused.
	ErrUnavailable = errors.New("gpufleet: provider unavailable")
	// ErrNotSent: the provider gave up before sending the request (its
	// context ended while it waited for its turn, or it refuses to send
	// without a working list), so the call cannot have taken effect. The
	// Manager takes a create failing with it as a definite failure: it is
	// not looked up by label, and nothing created by it is waited for.
	ErrNotSent = errors.New("gpufleet: request not sent")
	// ErrAgentPathDown: an Agent could not reach the instance because a host
	// on the way failed (a jump host, shared by the instances behind it),
	// so nothing is known of the instance itself. The Manager reports a
	// check or an agent start failing with it but does not count it
	// against the instance (an agent deadline counts from the last such
	// start failure).
	ErrAgentPathDown = errors.New("gpufleet: the way to the agent is down")
)

// classError is a gpufleet error that answers errors.Is for a class
// without repeating the "gpufleet: " prefix in its text.
type classError struct {
	msg   string
	class error
}

func (e *classError) Error() string {
	inner := strings.TrimPrefix(e.class.Error(), "gpufleet: ")
	if e.msg == "" {
		return inner
	}
	return e.msg + ": " + inner
}
func (e *classError) Unwrap() error { return e.class }

// classed returns "gpufleet: <format>: <class without its prefix>",
// answering errors.Is for class.
func classed(class error, format string, args ...any) error {
	return &classError{msg: "gpufleet: " + fmt.Sprintf(format, args...), class: class}
}

// unprefixed wraps err so that its text loses a leading "gpufleet: "
// (for wrapping inside another gpufleet error); errors.Is still sees err.
func unprefixed(err error) error {
	if err == nil || !strings.HasPrefix(err.Error(), "gpufleet: ") {
		return err
	}
	return &classError{msg: "", class: err}
}
