package vultr

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"

	"github.com/gpufleet/gpufleet/internal/api"
)

// assignedIP returns ip unless it is "" or unspecified ("0.0.0.0", "::"),
// which is how the API says "no address yet".
func assignedIP(ip string) (string, bool) {
	if ip == "" {
		return "", false
	}
	if a, err := netip.ParseAddr(ip); err == nil && a.IsUnspecified() {
		return "", false
	}
	return ip, true
}

// optionalIP is assignedIP of a key that may be absent (nil).
func optionalIP(ip *string) (string, bool) {
	if ip == nil {
		return "", false
	}
	return assignedIP(*ip)
}

// missingKey reports a 2xx answer without the object it should carry.
func missingKey(method, path, key string) error {
	return &api.DecodeError{Method: method, Path: path, Err: fmt.Errorf("answer has no %q object", key)}
}

// one makes a call whose answer wraps a single object under key, as every
// Vultr create, get and update does ({"instance": {...}}), and returns the
// object. A 2xx answer without it is a *DecodeError when required (the
// create or get cannot have meant "nothing"), else nil with no error (an
// update answered with no body).
func one[T any](ctx context.Context, c *Client, method, path string, body any, key string, required bool) (*T, error) {
	var env map[string]json.RawMessage
	if err := c.do(ctx, method, path, nil, body, &env); err != nil {
		return nil, err
	}
	raw, ok := env[key]
	if !ok || string(raw) == "null" {
		if required {
			return nil, missingKey(method, path, key)
		}
		return nil, nil
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, &api.DecodeError{Method: method, Path: path, Err: err}
	}
	return v, nil
}
