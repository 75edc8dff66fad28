package vultr

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A 2xx answer that echoes the Authorization header into a field (a
// misbehaving proxy or API; the project's own Hot Aisle test feeds a 200 body
// carrying the key) reaches the *DecodeError unredacted: Time's decoder
// quotes the value it could not parse ("unrecognised date \"<key>\""), and
// MAC's does the same. README: "API keys never appear in logs, errors or
// %v"; the package doc: "it reaches no log line, error or formatted value".
// Expected: a DecodeError without the key (as error bodies are redacted).
func TestTesterCKeyEchoedInA2xxFieldNeverReachesTheDecodeError(t *testing.T) {
	const key = "K3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3Y"
	bodies := map[string]string{
		"date_created": `{"instance":{"id":"i1","label":"x","date_created":"%s"}}`,
		"mac_address":  `{"bare_metal":{"id":"b1","label":"x","mac_address":"%s"}}`,
	}
	for field, tmpl := range bodies {
		t.Run(field, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				echoed := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				w.Header().Set("Content-Type", "application/json")
				_, _ = fmt.Fprintf(w, tmpl, echoed)
			}))
			defer srv.Close()
			c := New(key, WithBaseURL(srv.URL), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
				WithRateLimit(0, 0), WithRetry(1, 0, 0))
			var err error
			if field == "date_created" {
				_, err = c.GetInstance(context.Background(), "i1")
			} else {
				_, err = c.GetBareMetal(context.Background(), "b1")
			}
			if err == nil {
				return // decoded without quoting anything: nothing leaked
			}
			text := fmt.Sprintf("%v %+v %#v", err, err, err)
			assert.NotContains(t, text, key, "the key reached the error: %v", err)
			var de *DecodeError
			require.ErrorAs(t, err, &de)
		})
	}
}
