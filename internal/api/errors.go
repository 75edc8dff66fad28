package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// TransportError is a failure to get an answer at all: connection refused or
// reset, DNS, TLS, a client timeout. It answers errors.Is(err,
// fleet.ErrUnavailable).
type TransportError struct {
	Provider     string // "vultr", "hotaisle"
	Method, Path string
	Err          error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("%s: %s %s: %v", e.Provider, e.Method, e.Path, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// Is makes a TransportError match fleet.ErrUnavailable.
func (e *TransportError) Is(target error) bool { return target == fleet.ErrUnavailable }

// DecodeError is a 2xx answer whose body is not what the endpoint promises:
// empty, not JSON (an HTML page), cut short, of another shape (an error
// object, {} or null where an object or list should be), or without the field
// that identifies the object. After a create it means the resource may exist.
// It answers no fleet error class.
type DecodeError struct {
	Provider     string // "vultr", "hotaisle"
	Method, Path string
	Err          error // why the body was refused
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s: %s %s: decode response: %v", e.Provider, e.Method, e.Path, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// parseRetryAfter reads a Retry-After header in seconds or as an HTTP date;
// 0 when absent or malformed.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// contextError is a call cut short by its context: cancelled, or past its
// deadline, during an attempt, a limiter wait or a backoff. It unwraps to the
// context's error and to the last answer or failure, when there was one (so
// errors.Is finds both); its text names the call once. When no attempt of
// the call reached the HTTP client (the context ended before the call, or
// during the limiter's wait for the first attempt), it also answers
// fleet.ErrNotSent: nothing can have happened.
type contextError struct {
	provider, method, path string
	during                 string // "rate limiter wait", or "" for the call itself
	err                    error  // ctx.Err()
	last                   error  // the last attempt's error, nil when none
	notSent                bool   // no attempt was handed to the HTTP client
}

func (e *contextError) Error() string {
	call := e.provider + ": " + e.method + " " + e.path + ": "
	s := call
	if e.during != "" {
		s += e.during + ": "
	}
	s += e.err.Error()
	if e.last != nil {
		s += " (last error: " + strings.TrimPrefix(e.last.Error(), call) + ")"
	}
	if e.notSent {
		s += " (request not sent)"
	}
	return s
}

func (e *contextError) Unwrap() []error {
	if e.last == nil {
		return []error{e.err}
	}
	return []error{e.err, e.last}
}

// Is makes a contextError of a call never sent match fleet.ErrNotSent.
func (e *contextError) Is(target error) bool { return e.notSent && target == fleet.ErrNotSent }

// KeyError is a call refused before sending because the API key, once
// trimmed of surrounding white space, cannot be sent: it is empty where the
// API needs one, or it holds a character no header can carry (a line break
// or another control character inside it). It answers errors.Is for
// fleet.ErrUnauthorized (the key is wrong) and fleet.ErrNotSent (nothing was
// sent, so nothing happened), and is not retried. It never quotes the key.
type KeyError struct {
	Provider     string // "vultr", "hotaisle"
	Method, Path string
	Reason       string // "the API key is empty", ...
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("%s: %s %s: %s (request not sent)", e.Provider, e.Method, e.Path, e.Reason)
}

// Is makes a KeyError match fleet.ErrUnauthorized and fleet.ErrNotSent.
func (e *KeyError) Is(target error) bool {
	return target == fleet.ErrUnauthorized || target == fleet.ErrNotSent
}

// CheckKey returns why key cannot be sent in a header ("" when it can): a
// byte below 0x20 or 0x7f (a line break, a tab, NUL...). Empty is accepted
// here; a client whose API has no call without a key refuses it itself.
func CheckKey(key string) string {
	for i := 0; i < len(key); i++ {
		if b := key[i]; b < 0x20 || b == 0x7f {
			return fmt.Sprintf("the API key holds a control character (byte %d of %d is 0x%02x), which no header can carry",
				i+1, len(key), b)
		}
	}
	return ""
}
