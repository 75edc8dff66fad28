package api

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Redacted replaces the API key wherever an error would otherwise carry it.
const Redacted = "[redacted]"

// MinRedactLen is the shortest key searched for: a shorter "key" would match
// ordinary text (a Vultr key is 36 characters, a Hot Aisle key longer).
const MinRedactLen = 8

// Secrets returns the forms of key to cut out of answers: the key as given
// and trimmed of spaces, when at least MinRedactLen bytes long.
func Secrets(key string) []string {
	var out []string
	for _, k := range []string{key, strings.TrimSpace(key)} {
		if len(k) >= MinRedactLen && (len(out) == 0 || out[0] != k) {
			out = append(out, k)
		}
	}
	return out
}

// RedactString replaces every occurrence of a secret in s.
func RedactString(s string, secrets []string) string {
	for _, k := range secrets {
		s = strings.ReplaceAll(s, k, Redacted)
	}
	return s
}

// RedactBody cuts the secrets out of a response body: literal occurrences,
// and, in a JSON body with escapes, occurrences only visible once decoded
// ("\u0053ECRET..."): such a body is decoded, redacted and re-encoded.
func RedactBody(b []byte, secrets []string) []byte {
	if len(secrets) == 0 || len(b) == 0 {
		return b
	}
	for _, k := range secrets {
		b = bytes.ReplaceAll(b, []byte(k), []byte(Redacted))
	}
	if bytes.IndexByte(b, '\\') < 0 {
		return b
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	v, changed := redactJSON(v, secrets)
	if !changed {
		return b
	}
	if out, err := json.Marshal(v); err == nil {
		return out
	}
	return []byte(Redacted)
}

// redactJSON redacts every string (keys included) of a decoded JSON value.
func redactJSON(v any, secrets []string) (any, bool) {
	switch x := v.(type) {
	case string:
		r := RedactString(x, secrets)
		return r, r != x
	case []any:
		changed := false
		for i := range x {
			var c bool
			x[i], c = redactJSON(x[i], secrets)
			changed = changed || c
		}
		return x, changed
	case map[string]any:
		out := make(map[string]any, len(x))
		changed := false
		for k, e := range x {
			e, c := redactJSON(e, secrets)
			rk := RedactString(k, secrets)
			out[rk] = e
			changed = changed || c || rk != k
		}
		return out, changed
	}
	return v, false
}
