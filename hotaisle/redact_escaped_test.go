package hotaisle_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/stretchr/testify/require"
)

// The key must not reach an error, also when the server echoes it
// JSON-escaped (valid JSON for the same text): the body is decoded,
// redacted and re-encoded before its message is read.
func TestKeyEchoedEscapedNeverReachesTheError(t *testing.T) {
	const key = "6ddfaa4539b4c7e046fe4b94.ee70aa11bb22cc33dd44ee55ff6600112233445566778899aabbccddeeff0011"
	i := strings.IndexByte(key, '.') + 1
	escaped := key[:i] + `\u0065` + key[i+1:] // the secret's first "e" written as \u0065
	for name, body := range map[string]string{
		"json string": `"Invalid token ` + escaped + `"`,
		"detail":      `{"detail":"Invalid token ` + escaped + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, body)
			}))
			defer srv.Close()
			c := hotaisle.New(key, "team", hotaisle.WithBaseURL(srv.URL+"/api"))
			_, err := c.GetUser(t.Context())
			require.Error(t, err)
			for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				require.False(t, strings.Contains(s, key[len(key)-20:]), "the key's secret reached the error: %s", s)
			}
		})
	}
}
