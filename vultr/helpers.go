package vultr

import (
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
