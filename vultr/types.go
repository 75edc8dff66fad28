package vultr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// Time is a Vultr timestamp. It decodes ISO-8601 with an offset
// ("2024-12-02T10:19:45-05:00", what the API returns today) and the legacy
// "YYYY-MM-DD HH:MM:SS" form (taken as UTC); "" and null decode to the zero
// time. Any other text is a decoding error naming the value.
type Time struct{ time.Time }

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		t.Time = time.Time{}
		return nil
	}
	s, err := jsonString(b)
	if err != nil {
		return fmt.Errorf("date %s: %w", b, err)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		t.Time = time.Time{}
		return nil
	}
	for _, layout := range timeLayouts {
		if v, err := time.Parse(layout, s); err == nil {
			t.Time = v
			return nil
		}
	}
	return fmt.Errorf("unrecognised date %q", s)
}

// jsonString decodes a JSON string, without a second decoder pass when it
// has no escapes (the common case for dates).
func jsonString(b []byte) (string, error) {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
		return string(b[1 : len(b)-1]), nil
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err
}

// MarshalJSON writes RFC 3339, or "" for the zero time.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte(`""`), nil
	}
	return json.Marshal(t.Format(time.RFC3339))
}

// Secret is a credential the API returns (an instance's default root
// password). Its formatted forms print "[redacted]"; string(s) gives the value.
type Secret string

// String returns "[redacted]" (or "" when empty).
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString is String.
func (s Secret) GoString() string { return s.String() }

// Format prints String for every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = fmt.Fprint(f, s.String()) }

// FlexInt is an integer the API sends as a JSON number but some spec
// versions describe as a string (metal plan "disk"): it decodes a number, a
// numeric string, "" or null (the last two as 0); a fraction, NaN, an
// infinity or a magnitude over 2^53 is an error.
type FlexInt int

// UnmarshalJSON implements json.Unmarshaler.
func (n *FlexInt) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 { // NaN, ±Inf, fractions, out of range
		return fmt.Errorf("not an integer: %s", b)
	}
	*n = FlexInt(v)
	return nil
}

// MAC is a bare-metal "mac_address", which the API sends as an integer: the
// 48-bit address in the low bytes, most significant byte first
// (2199756823533 is 02:00:2b:b9:5b:ed). It also decodes a numeric or
// colon-hex string, "" and null (0, not assigned yet).
type MAC uint64

// UnmarshalJSON implements json.Unmarshaler.
func (m *MAC) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' {
		if string(b) == "null" {
			*m = 0
			return nil
		}
		v, err := strconv.ParseUint(string(b), 10, 64)
		if err != nil {
			return fmt.Errorf("mac_address %s: %w", b, err)
		}
		*m = MAC(v)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "" {
		*m = 0
		return nil
	}
	if v, err := strconv.ParseUint(s, 10, 64); err == nil {
		*m = MAC(v)
		return nil
	}
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return fmt.Errorf("mac_address %q: not a MAC", s)
	}
	var v uint64
	for _, x := range hw {
		v = v<<8 | uint64(x)
	}
	*m = MAC(v)
	return nil
}

// MarshalJSON writes the integer form the API uses.
func (m MAC) MarshalJSON() ([]byte, error) { return strconv.AppendUint(nil, uint64(m), 10), nil }

// HardwareAddr returns the 48-bit address, or nil for 0 (not assigned yet).
func (m MAC) HardwareAddr() net.HardwareAddr {
	if m == 0 {
		return nil
	}
	hw := make(net.HardwareAddr, 6)
	for i := range 6 {
		hw[5-i] = byte(m >> (8 * i))
	}
	return hw
}

// String returns the colon-hex form ("02:00:..."), or "" for 0.
func (m MAC) String() string { return m.HardwareAddr().String() }

// Meta is the pagination block of a list answer.
type Meta struct {
	Total int `json:"total"` // number of items across all pages
	Links struct {
		Next string `json:"next"` // cursor of the next page; "" on the last
		Prev string `json:"prev"` // cursor of the previous page
	} `json:"links"`
}
