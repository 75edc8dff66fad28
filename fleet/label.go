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

// LabelPrefix starts every label gpufleet wrote before owners existed
// (format 1, "gpufleet.<fleet>.<request>"). Resources without a gpufleet
// label are never touched.
const LabelPrefix = "gpufleet"

// LabelPrefixV2 starts every label gpufleet writes now (format 2,
// "gf2.<owner>.<fleet>.<request>").
const LabelPrefixV2 = "gf2"

// MaxLabelLength is the longest label gpufleet writes (64 characters, the
// bound orchestrators keep for Vultr labels).
const MaxLabelLength = 64

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

var ownerRE = regexp.MustCompile(`^[a-z0-9]{1,6}$`)

// ValidateOwner checks an owner id (Config.Owner): 1 to 6 lowercase
// letters and digits, so that a format-2 label of a 40-character fleet
// name stays within MaxLabelLength.
func ValidateOwner(owner string) error {
	if !ownerRE.MatchString(owner) {
		return fmt.Errorf("gpufleet: invalid owner %q: want 1-6 of [a-z0-9]", owner)
	}
	return nil
}

// ValidateLabelFits checks that a fleet's labels fit MaxLabelLength.
func ValidateLabelFits(owner, fleet string) error {
	if n := len(Label{Owner: owner, Fleet: fleet, RequestID: "000000000000"}.String()); n > MaxLabelLength {
		return fmt.Errorf("gpufleet: fleet %s: its labels would be %d characters, over %d", fleet, n, MaxLabelLength)
	}
	return nil
}

// Label names the owner, the fleet and the create request a resource
// belongs to. Its text form, written on every resource gpufleet creates
// (Vultr label and tags, VPC and Hot Aisle descriptions, SSH key comments),
// is versioned:
//
//	format 2 (written now):        gf2.<owner>.<fleet>.<request>
//	format 1 (before owners):      gpufleet.<fleet>.<request>
//
// ParseLabel reads both; a format-1 label has an empty Owner.
type Label struct {
	Owner     string // see Config.Owner; "" in format 1
	Fleet     string
	RequestID string // 12 lowercase hex characters, see NewRequestID
}

// String is the label's text form: format 2 when Owner is set, else format 1.
func (l Label) String() string {
	if l.Owner == "" {
		return LabelPrefix + "." + l.Fleet + "." + l.RequestID
	}
	return LabelPrefixV2 + "." + l.Owner + "." + l.Fleet + "." + l.RequestID
}

// ParseLabel reads a label written by Label.String, in either format; ok
// is false for any other text (a resource that is not gpufleet's).
func ParseLabel(s string) (l Label, ok bool) {
	parts := strings.Split(s, ".")
	switch {
	case len(parts) == 3 && parts[0] == LabelPrefix:
		l = Label{Fleet: parts[1], RequestID: parts[2]}
	case len(parts) == 4 && parts[0] == LabelPrefixV2 && ValidateOwner(parts[1]) == nil:
		l = Label{Owner: parts[1], Fleet: parts[2], RequestID: parts[3]}
	default:
		return Label{}, false
	}
	if ValidateFleetName(l.Fleet) != nil || !requestIDRE.MatchString(l.RequestID) {
		return Label{}, false
	}
	return l, true
}

var requestIDRE = regexp.MustCompile(`^[0-9a-f]{12}$`)

// NewRequestID returns a fresh random request id (12 hex characters).
func NewRequestID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newOwnerID returns a fresh random owner id (6 characters of [a-z0-9]).
func newOwnerID() string {
	const digits = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [6]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = digits[int(b[i])%len(digits)]
	}
	return string(b[:])
}

func joinHostPort(host string, port int) string {
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
