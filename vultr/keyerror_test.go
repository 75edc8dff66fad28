package vultr

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// KeyError's doc: a key that still holds a control character after trimming
// fails every call before sending, answers ErrUnauthorized and ErrNotSent,
// and never quotes the key. Holds today; kept as a regression test.
func TestKeyWithInnerLineBreakFailsBeforeSendingWithoutQuotingIt(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	const key = "SECRETPART1\nSECRETPART2"
	c := New(" Bearer "+key+"\n", WithBaseURL(srv.URL), WithHTTPClient(srv.Client()), WithRateLimit(0, 0))
	_, err := c.GetVPC(t.Context(), "v1")
	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	assert.ErrorIs(t, err, fleet.ErrUnauthorized)
	assert.ErrorIs(t, err, fleet.ErrNotSent)
	assert.Zero(t, hits.Load(), "nothing sent")
	assert.NotContains(t, err.Error(), "SECRETPART")
	assert.NotContains(t, ke.Error(), "SECRETPART")
}
