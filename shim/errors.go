package shim

import (
	"errors"
	"fmt"
	"github.com/gpufleet/gpufleet/fleet"
	"strings"
)

// Stage names the part of a start or check that failed.
type Stage string

// Stages of connecting, starting and checking an agent, in order.
const (
	// StageDial: the TCP connect failed (refused, unreachable, timed out),
	// directly or through the jump host's direct-tcpip. Retried.
	StageDial Stage = "dial"
	// StageBanner: TCP was accepted but no SSH version line came (the
	// connection closed or hung before the banner). Retried.
	StageBanner Stage = "banner"
	// StageHandshake: the key exchange after the banner failed. Retried.
	StageHandshake Stage = "handshake"
	// StageHostKey: the host key policy refused the host's key. Never
	// retried: a different key is a different host.
	StageHostKey Stage = "host key"
	// StageAuth: the host refused every key (keys are often installed late).
	// Retried.
	StageAuth Stage = "auth"
	// StageStep: an install or start command failed (*StepError).
	StageStep Stage = "step"
	// StageHealth: the agent's health check failed (*HealthError).
	StageHealth Stage = "health"
)

// StageOf returns the stage at which a Start, Check or Connect error
// failed: the ConnectError's stage, StageStep or StageHealth; "" for other
// errors (a cancelled wait for another Start of the same instance, say).
func StageOf(err error) Stage {
	var ce *ConnectError
	var se *StepError
	var he *HealthError
	switch {
	case errors.As(err, &ce):
		return ce.Stage
	case errors.As(err, &se):
		return StageStep
	case errors.As(err, &he):
		return StageHealth
	}
	return ""
}

// ConnectError is a failure to open an authenticated SSH connection: the
// stage of the last attempt, how many attempts were made, the last
// attempt's error and, when the context ended, the context's error (so
// errors.Is(err, context.DeadlineExceeded) answers for a deadline).
type ConnectError struct {
	InstanceID string // the instance the start was for
	Addr       string // "host:port" of the failing host
	Jump       bool   // the failing host is the jump host
	Stage      Stage  // StageDial, StageBanner, StageHandshake, StageHostKey or StageAuth
	Attempts   int
	Err        error // the last attempt's error
	Ctx        error // ctx.Err() when the context ended the retries, else nil
}

func (e *ConnectError) Error() string {
	var b strings.Builder
	b.WriteString("shim: ")
	if e.Jump {
		b.WriteString("jump host ")
	}
	fmt.Fprintf(&b, "%s (instance %s): %s failed after %d attempt(s)", e.Addr, e.InstanceID, e.Stage, e.Attempts)
	if e.Ctx != nil {
		fmt.Fprintf(&b, " (%v)", e.Ctx)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the context error (if any) and the last attempt's error,
// and fleet.ErrAgentPathDown when the failing host is the jump host (the
// instance behind it is not judged by it).
func (e *ConnectError) Unwrap() []error {
	var out []error
	if e.Jump {
		out = append(out, fleet.ErrAgentPathDown)
	}
	if e.Ctx != nil {
		out = append(out, e.Ctx)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// HostKeyMismatchError reports a host key that differs from the one pinned
// for the host identity (an instance id, or a known_hosts entry): a
// different machine, or a reinstalled one, never the same host. It is never
// retried.
type HostKeyMismatchError struct {
	ID   string   // the host identity (HostIdentity, "jump:<addr>") or the known_hosts name
	Addr string   // "host:port" dialled
	Want []string // SHA256 fingerprints of the accepted keys
	Got  string   // SHA256 fingerprint of the key the host presented
}

func (e *HostKeyMismatchError) Error() string {
	return fmt.Sprintf("shim: host key mismatch for %s at %s: got %s, want %s",
		e.ID, e.Addr, e.Got, strings.Join(e.Want, " or "))
}

// UnknownHostError reports a host that has no entry in the known_hosts
// files of a KnownHosts policy. It is never retried.
type UnknownHostError struct {
	Addr string // "host:port" dialled
	Got  string // SHA256 fingerprint of the key the host presented
}

func (e *UnknownHostError) Error() string {
	return fmt.Sprintf("shim: host %s (key %s) is not in known_hosts", e.Addr, e.Got)
}

// StepError is a command run on the host that failed: its exit status was
// not 0, it could not be run, or it ran out of time.
type StepError struct {
	Step       string // the step's name ("install dstack-shim", "start")
	Index      int    // 1-based position among the steps this start ran
	ExitStatus int    // the command's exit status; -1 when it has none (killed, timed out, not run)
	Stderr     string // the tail of what it wrote to stderr (at most 8 KiB)
	Err        error  // the transport or timeout error, nil for a plain non-zero exit
}

func (e *StepError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "shim: step %d %q failed", e.Index, e.Step)
	if e.ExitStatus >= 0 {
		fmt.Fprintf(&b, " with exit status %d", e.ExitStatus)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		fmt.Fprintf(&b, ": stderr: %s", s)
	}
	return b.String()
}

// Unwrap returns Err.
func (e *StepError) Unwrap() error { return e.Err }

// HealthError is a failed agent health check: the forward could not be
// opened, the request failed, the status was not 200, or the body did not
// name the expected service.
type HealthError struct {
	InstanceID string
	URL        string // "http://localhost:10998/api/healthcheck", as reached through the tunnel
	StatusCode int    // 0 when no response came
	Service    string // the "service" field the agent answered, if any
	Err        error  // the transport, decode or context error, if any
}

func (e *HealthError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "shim: health check %s on instance %s failed", e.URL, e.InstanceID)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": status %d", e.StatusCode)
	}
	if e.Service != "" {
		fmt.Fprintf(&b, ", service %q", e.Service)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns Err.
func (e *HealthError) Unwrap() error { return e.Err }
