package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSecretsSkipShortKeysAndTrimSpaces(t *testing.T) {
	assert.Empty(t, Secrets("short"))
	assert.Equal(t, []string{" padded-key-123 ", "padded-key-123"}, Secrets(" padded-key-123 "))
}

// A body that echoes a secret with a JSON escape inside it is decoded,
// redacted and re-encoded; one without a secret is left byte for byte.
func TestRedactBodyCutsEscapedEchoes(t *testing.T) {
	const key = "abcd1234.secret-part-0123456789"
	keys := Secrets(key)
	got := RedactBody([]byte(`{"detail":"Invalid token abcd1234.s\u0065cret-part-0123456789"}`), keys)
	assert.JSONEq(t, `{"detail":"Invalid token [redacted]"}`, string(got))
	assert.Equal(t, []byte(`{"a":1.5}`), RedactBody([]byte(`{"a":1.5}`), keys))
	assert.Equal(t, "x [redacted] y", RedactString("x "+key+" y", keys))
}

// A secret spelled with JSON escapes inside a quoted string of a text (a
// decoder quoting the raw value it could not read) is cut out, at any depth
// of quoting; quoted strings without a secret are left alone.
func TestRedactStringCutsEscapedSecretsInQuotes(t *testing.T) {
	const key = "abcd1234.secret-part-0123456789"
	keys := Secrets(key)
	for in, want := range map[string]string{
		`not a number: "\u0061bcd1234.secret-part-0123456789"`:          `not a number: "[redacted]"`,
		`date "x \u0061bcd1234.secret-part-0123456789 y": bad`:          `date "x [redacted] y": bad`,
		`value "\"\\u0061bcd1234.secret-part-0123456789\"" in "\u0041"`: `value "\"[redacted]\"" in "\u0041"`,
		`{"k":"\u0061bcd1234.secret-part-0123456789","n":"\n"}`:         `{"k":"[redacted]","n":"\n"}`,
		`unbalanced "\u0041 quote`:                                      `unbalanced "\u0041 quote`,
		`plain "abcd1234.secret-part-0123456789"`:                       `plain "[redacted]"`,
	} {
		assert.Equal(t, want, RedactString(in, keys), "%s", in)
	}
}

func TestRedactErrorDropsTheOriginalOnlyWhenItQuotesASecret(t *testing.T) {
	keys := Secrets("abcd1234.secret-part-0123456789")
	clean := fmt.Errorf("wrapped: %w", io.EOF)
	assert.Same(t, clean, RedactError(clean, keys))
	leaky := fmt.Errorf("value %q: %w", "abcd1234.secret-part-0123456789", io.EOF)
	got := RedactError(leaky, keys)
	assert.Equal(t, `value "[redacted]": EOF`, got.Error())
	assert.Nil(t, errors.Unwrap(got), "the original, which quotes the key, is not reachable")
	assert.Nil(t, RedactError(nil, keys))
	assert.Same(t, leaky, RedactError(leaky, nil))
}

func TestRequestIDIsRedacted(t *testing.T) {
	keys := Secrets("abcd1234.secret-part-0123456789")
	for _, name := range []string{"X-Request-Id", "Request-Id", "Cf-Ray"} {
		h := http.Header{}
		h.Set(name, "req-Token abcd1234.secret-part-0123456789")
		assert.Equal(t, "req-Token [redacted]", RequestID(h, keys), name)
	}
	h := http.Header{}
	h.Set("Cf-Ray", "ray")
	h.Set("X-Request-Id", "xid")
	assert.Equal(t, "xid", RequestID(h, keys), "X-Request-Id first")
	assert.Empty(t, RequestID(http.Header{}, keys))
}

// Every error the Client builds from an answer or a failure passes through
// the redaction: the error answer handed to ParseError (body, every header,
// path), a DecodeError (cause and path), a TransportError; and no formatted
// form of the Client holds the secrets.
func TestClientRedactsEveryErrorItBuilds(t *testing.T) {
	const key = "abcd1234.secret-part-0123456789"
	var got *Response
	status, body := 500, `{"error":"bad `+key+`"}`
	rt := rtFunc(func(r *http.Request) (*http.Response, error) {
		if status == 0 {
			return nil, fmt.Errorf("proxy refused %s", key)
		}
		return answer(status, body, "X-Request-Id", "r-"+key, "X-Other", key), nil
	})
	c := New(Config{Provider: "test", BaseURL: "https://api.example.test", HTTPClient: &http.Client{Transport: rt},
		Secrets: Secrets(key), Retry: RetryPolicy{Attempts: 1},
		ParseError: func(r *Response) error { got = r; return &testErr{status: r.Status} }})
	_, err := c.Do(context.Background(), Request{Method: "GET", Path: "/x/" + key}, nil)
	require.Error(t, err)
	require.NotNil(t, got)
	assert.Equal(t, "r-[redacted]", got.Header.Get("X-Request-Id"))
	assert.Equal(t, Redacted, got.Header.Get("X-Other"))
	assert.Equal(t, `{"error":"bad [redacted]"}`, string(got.Body))
	assert.Equal(t, "/x/"+Redacted, got.Path)

	status, body = 200, `{"n":"`+key+`"}`
	var out struct{ N int }
	_, err = c.Do(context.Background(), Request{Method: "GET", Path: "/x/" + key}, &out)
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "/x/"+Redacted, de.Path)
	de = c.DecodeError("GET", "/y", fmt.Errorf("date %q", key))
	assert.Equal(t, `test: GET /y: decode response: date "[redacted]"`, de.Error())

	status = 0
	_, err = c.Do(context.Background(), Request{Method: "GET", Path: "/z"}, nil)
	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v", err, err, err), key)

	assert.NotContains(t, fmt.Sprintf("%v %+v %#v %v %+v", c, c, c, *c, *c), "secret-part")
}
