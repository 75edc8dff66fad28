package vultr

import (
	"bytes"
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

// identified is implemented by the objects a create or get answers with:
// the id that makes them trackable.
type identified interface{ objectID() string }

func (i *Instance) objectID() string  { return i.ID }
func (b *BareMetal) objectID() string { return b.ID }
func (v *VPC) objectID() string       { return v.ID }
func (k *SSHKey) objectID() string    { return k.ID }

// one makes a call whose answer wraps a single object under key, as every
// Vultr create, get and update does ({"instance": {...}}), and returns the
// object. A 2xx answer without it (an empty body, {}, an error object, an
// object without its id) is a *DecodeError; only an update (required false)
// may answer with no body at all: nil, no error.
func one[T any, P interface {
	*T
	identified
}](ctx context.Context, c *Client, method, path string, body any, key string, required bool) (*T, error) {
	var env map[string]json.RawMessage
	req := api.Request{Method: method, Path: path, Body: body, OptionalBody: !required}
	resp, err := c.api.Do(ctx, req, &env)
	if err != nil {
		return nil, err
	}
	if !required && len(bytes.TrimSpace(resp.Body)) == 0 {
		return nil, nil
	}
	raw, ok := env[key]
	if !ok || string(raw) == "null" {
		return nil, c.api.DecodeError(method, path, fmt.Errorf("the answer has no %q object", key))
	}
	v := P(new(T))
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, c.api.DecodeError(method, path, err)
	}
	if v.objectID() == "" {
		return nil, c.api.DecodeError(method, path, fmt.Errorf("the %q object has no id", key))
	}
	return (*T)(v), nil
}
