package hotaisle

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGETRetriesGatewayErrorsThenSucceeds(t *testing.T) {
	c, m := newMock(t)
	m.RegisterResponder("GET", testBase+"/teams/acme/virtual_machines/",
		m.record(503, `"Service Unavailable"`).Then(m.record(502, "bad gateway")).Then(m.record(200, `[`+e4VM+`]`)))
	vms, err := c.ListVMs(context.Background())
	require.NoError(t, err)
	assert.Len(t, vms, 1)
	assert.Equal(t, 3, m.count())
}

func TestPOSTsAreNeverRetried(t *testing.T) {
	ctx := context.Background()
	for name, call := range map[string]func(c *Client) error{
		"provision": func(c *Client) error {
			_, err := c.ProvisionVM(ctx, VMProvisionRequest{VMSpecs: VMSpecs{CPUCores: 13}})
			return err
		},
		"reserve": func(c *Client) error {
			_, err := c.ReserveBareMetal(ctx, BareMetalReservation{Specs: BareMetalSpecs{CPUCores: 104}})
			return err
		},
		"add key": func(c *Client) error { _, _, err := c.AddSSHKey(ctx, testAuthorizedKey(t)); return err },
	} {
		t.Run(name, func(t *testing.T) {
			c, m := newMock(t)
			resp := m.record(503, `"Service Unavailable"`)
			m.RegisterResponder("POST", testBase+"/teams/acme/virtual_machines/", resp)
			m.RegisterResponder("POST", testBase+"/teams/acme/bare_metal/", resp)
			m.RegisterResponder("POST", testBase+"/user/ssh_keys/", resp)
			err := call(c)
			assert.ErrorIs(t, err, fleet.ErrUnavailable)
			assert.Equal(t, 1, m.count())
		})
	}
}

func TestTimedOutDeleteRepeatsAndNotFoundMeansGone(t *testing.T) {
	// The first DELETE is cut (connection reset after the server started the
	// reset); the retry finds the VM gone.
	c, m := newMock(t)
	m.RegisterResponder("DELETE", testBase+"/teams/acme/virtual_machines/vm1/",
		httpmock.NewErrorResponder(syscall.ECONNRESET).Then(m.record(404, `"Not Found: Resource not found"`)))
	err := c.DeleteVM(context.Background(), "vm1", true)
	assert.ErrorIs(t, err, fleet.ErrNotFound)
	assert.Equal(t, "force=true", m.last(t).RawQuery)
}

func TestRetryAfterIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, m := newMock(t, WithRetryPolicy(RetryPolicy{Attempts: 3}))
		var at []time.Time
		rec := m.record(429, `"Too Many Requests"`, "Retry-After", "9")
		stamp := func(r httpmock.Responder) httpmock.Responder {
			return func(req *http.Request) (*http.Response, error) { at = append(at, time.Now()); return r(req) }
		}
		m.RegisterResponder("GET", testBase+"/user/ssh_keys/", stamp(rec).Then(stamp(m.record(200, `[]`))))
		_, err := c.ListSSHKeys(t.Context())
		require.NoError(t, err)
		require.Len(t, at, 2)
		assert.Equal(t, 9*time.Second, at[1].Sub(at[0]))
	})
}

func TestRateLimiterIsSharedByAllCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, m := newMock(t, WithRateLimit(DefaultRateLimit, DefaultBurst))
		m.on("GET", "/teams/acme/virtual_machines/", 200, `[]`)
		m.on("GET", "/user/ssh_keys/", 200, `[]`)
		start := time.Now()
		for i := range 30 {
			var err error
			if i%2 == 0 {
				_, err = c.ListVMs(t.Context())
			} else {
				_, err = c.ListSSHKeys(t.Context())
			}
			require.NoError(t, err)
		}
		// 10 from the burst, then 20 more at 10/s.
		assert.Equal(t, 2*time.Second, time.Since(start))
	})
}

func TestDefaultsAllowABlockingDelete(t *testing.T) {
	assert.Equal(t, 2*time.Minute, defaultHTTPClient().Timeout)
	c := New(testKey, "acme")
	assert.Equal(t, "acme", c.Team())
	assert.Equal(t, DefaultBaseURL, c.baseURL)
}

func TestContextCancelStopsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, m := newMock(t, WithRetryPolicy(RetryPolicy{Attempts: 100, MinDelay: time.Second, MaxDelay: time.Minute}))
		m.on("GET", "/teams/acme/virtual_machines/", 503, `"Service Unavailable"`)
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		_, err := c.ListVMs(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, fleet.ErrUnavailable, "the last API error stays visible")
	})
}
