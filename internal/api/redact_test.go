package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
