package hotaisle

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// KeyError's doc: an empty key (after trimming) or one holding a character no
// header can carry fails every call before sending, answers ErrUnauthorized
// and ErrNotSent, and never quotes the key. Holds today; regression test.
func TestEmptyOrBrokenKeyFailsBeforeSending(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	for _, key := range []string{"", "  \n", "SECRETPART1\rSECRETPART2"} {
		c := New(key, "acme", WithBaseURL(srv.URL+"/api"), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
			WithRateLimit(0, 0))
		_, err := c.ListVMTypes(t.Context())
		var ke *KeyError
		require.ErrorAs(t, err, &ke, "%q", key)
		assert.ErrorIs(t, err, fleet.ErrUnauthorized)
		assert.ErrorIs(t, err, fleet.ErrNotSent)
		assert.NotContains(t, err.Error(), "SECRETPART")
	}
	assert.Zero(t, hits.Load(), "nothing sent")
}
