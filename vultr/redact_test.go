package vultr

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonEscapeAll writes s as a JSON string body with every byte \u-escaped.
func jsonEscapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// A server that echoes the Authorization header value back in its error
// bodies (JSON, plain text, \u-escaped JSON, a nested field) and in
// X-Request-Id: the key reaches no field of the APIError and no verb.
func TestEchoedAPIKeyIsRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("X-Request-Id", "req-"+auth)
		switch r.URL.Path {
		case "/v2/instances/json":
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":"Invalid API token: %s","status":401}`, auth)
		case "/v2/instances/text":
			w.WriteHeader(400)
			fmt.Fprintf(w, "Authorization: %s", auth)
		case "/v2/instances/escaped":
			w.WriteHeader(403)
			fmt.Fprintf(w, `{"error":"%s","status":403,"detail":{"%s":["%s"]}}`,
				jsonEscapeAll(auth), jsonEscapeAll(testKey), jsonEscapeAll(testKey))
		default:
			w.WriteHeader(500)
			fmt.Fprintf(w, `{"error":"boom","status":500,"echo":%q}`, auth)
		}
	}))
	t.Cleanup(srv.Close)
	c := New(testKey, WithBaseURL(srv.URL), WithRateLimit(0, 0), WithRetry(1, 0, 0))
	hexKey := hex.EncodeToString([]byte(testKey))
	for _, id := range []string{"json", "text", "escaped", "other"} {
		t.Run(id, func(t *testing.T) {
			_, err := c.GetInstance(t.Context(), id)
			var ae *APIError
			require.ErrorAs(t, err, &ae)
			var out strings.Builder
			for _, v := range []any{err, ae, *ae} {
				fmt.Fprintf(&out, "%v|%+v|%#v|%s|%q|%x|%X\n", v, v, v, v, v, v, v)
			}
			out.WriteString(ae.Error())
			out.Write(ae.Body)
			var decoded any // an escaped echo is only visible once decoded
			if json.Unmarshal(ae.Body, &decoded) == nil {
				fmt.Fprint(&out, decoded)
			}
			walkStrings(reflect.ValueOf(ae), map[uintptr]bool{}, func(s string) { out.WriteString(s) })
			text := strings.ToLower(out.String())
			assert.NotContains(t, text, strings.ToLower(testKey))
			assert.NotContains(t, text, "topsecret")
			assert.NotContains(t, text, hexKey)
			assert.Contains(t, string(ae.Body)+ae.Message, "[redacted]", "the echo is marked")
			assert.Contains(t, ae.RequestID, "[redacted]")
		})
	}
	_, err := c.GetInstance(t.Context(), "json")
	assert.ErrorIs(t, err, fleet.ErrUnauthorized, "still classified")
	var ae *APIError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, "Invalid API token: Bearer [redacted]", ae.Message)
}
