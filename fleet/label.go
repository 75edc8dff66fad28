package fleet

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// LabelPrefix starts every label gpufleet writes. Resources without it are
// never touched.
const LabelPrefix = "gpufleet"

var fleetNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// ValidateFleetName checks a fleet name: 1 to 40 lowercase letters, digits
// and dashes, not starting or ending with a dash (it goes into labels and
// host names).
func ValidateFleetName(name string) error {
	if !fleetNameRE.MatchString(name) {
		return fmt.Errorf("gpufleet: invalid fleet name %q: want 1-40 of [a-z0-9-], no leading or trailing dash", name)
	}
	return nil
}

// Label names the fleet and the create request a resource belongs to.
// Its text form, "gpufleet.<fleet>.<request>", fits Vultr labels (64
// characters) and Hot Aisle descriptions.
type Label struct {
	Fleet     string
	RequestID string // 12 lowercase hex characters, see NewRequestID
}

// String is the label's text form.
func (l Label) String() string { return LabelPrefix + "." + l.Fleet + "." + l.RequestID }

// ParseLabel reads a label written by Label.String; ok is false for any
// other text (a resource that is not ours).
func ParseLabel(s string) (l Label, ok bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[0] != LabelPrefix {
		return Label{}, false
	}
	if ValidateFleetName(parts[1]) != nil || !requestIDRE.MatchString(parts[2]) {
		return Label{}, false
	}
	return Label{Fleet: parts[1], RequestID: parts[2]}, true
}

var requestIDRE = regexp.MustCompile(`^[0-9a-f]{12}$`)

// NewRequestID returns a fresh random request id (12 hex characters).
func NewRequestID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func joinHostPort(host string, port int) string {
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
