package api

import (
	"bytes"
	"encoding/json"
	"net/http"
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

// RedactString replaces every occurrence of a secret in s, also inside a
// double-quoted JSON string of s that spells it with escapes (a decoder
// quoting the raw value "\u0053ECRET..." it could not read), which is then
// replaced whole by the quoted redacted text.
func RedactString(s string, secrets []string) string {
	for _, k := range secrets {
		s = strings.ReplaceAll(s, k, Redacted)
	}
	if len(secrets) == 0 || !strings.Contains(s, `\`) {
		return s
	}
	return redactQuoted(s, secrets)
}

// redactQuoted redacts every "..." segment of s that decodes as a JSON
// string (escapes included) holding a secret, at any depth of quoting.
func redactQuoted(s string, secrets []string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		j := closingQuote(s, i+1)
		if j < 0 {
			break
		}
		seg := s[i : j+1]
		var v string
		if strings.Contains(seg, `\`) && json.Unmarshal([]byte(seg), &v) == nil {
			if r := RedactString(v, secrets); r != v {
				enc, _ := json.Marshal(r)
				seg = string(enc)
			}
		}
		b.WriteString(s[:i])
		b.WriteString(seg)
		s = s[j+1:]
	}
	b.WriteString(s)
	return b.String()
}

// closingQuote is the index of the first '"' of s from start that no
// backslash escapes, or -1.
func closingQuote(s string, start int) int {
	for k := start; k < len(s); k++ {
		switch s[k] {
		case '\\':
			k++
		case '"':
			return k
		}
	}
	return -1
}

// RedactError returns err when its text holds no secret, else an error
// with the redacted text only: the original, which would still quote the
// secret, is dropped from the chain. nil stays nil.
func RedactError(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	text := err.Error()
	if r := RedactString(text, secrets); r != text {
		return &redactedError{msg: r}
	}
	return err
}

// redactedError is an error whose text had a secret cut out.
type redactedError struct{ msg string }

func (e *redactedError) Error() string { return e.msg }

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

// redactAnswer returns a copy of the error answer r with every secret cut
// out of its body, header values and path, before any error is built from
// it (see RedactBody, RedactHeader).
func (c *Client) redactAnswer(r *Response) *Response {
	keys := c.secrets()
	if len(keys) == 0 {
		return r
	}
	out := *r
	out.Body = RedactBody(r.Body, keys)
	out.Header = RedactHeader(r.Header, keys)
	out.Path = RedactString(r.Path, keys)
	return &out
}

// RedactHeader returns a copy of h with every secret cut out of its values.
func RedactHeader(h http.Header, secrets []string) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		rv := make([]string, len(vs))
		for i, v := range vs {
			rv[i] = RedactString(v, secrets)
		}
		out[k] = rv
	}
	return out
}

// RequestID returns the request id the API sent (the first of the
// X-Request-Id, Request-Id and Cf-Ray headers that is set), with every
// secret cut out: a server or proxy may echo the Authorization header
// there. "" when none is set.
func RequestID(h http.Header, secrets []string) string {
	for _, k := range []string{"X-Request-Id", "Request-Id", "Cf-Ray"} {
		if v := h.Get(k); v != "" {
			return RedactString(v, secrets)
		}
	}
	return ""
}
