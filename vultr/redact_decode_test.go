package vultr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const echoKey = "K3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3Y"

// escapeFirst spells s as JSON string content with its first byte as a
// \u escape, so that the raw body never holds s literally.
func escapeFirst(s string) string { return fmt.Sprintf(`\u%04x`, s[0]) + s[1:] }

// echoServer answers every request with tmpl, its %s replaced by the key
// the request carried (spelled by spell).
func echoServer(t *testing.T, tmpl string, spell func(string) string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echoed := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, tmpl, spell(echoed))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// echoedFields are 2xx answers that carry the key in a field a decoder
// quotes when it cannot read it, and the call that reads each.
var echoedFields = []struct {
	name, body string
	call       func(ctx context.Context, c *Client) error
}{
	{"instance date_created", `{"instance":{"id":"i1","label":"x","date_created":"%s"}}`,
		func(ctx context.Context, c *Client) error { _, err := c.GetInstance(ctx, "i1"); return err }},
	{"bare metal mac_address", `{"bare_metal":{"id":"b1","label":"x","mac_address":"%s"}}`,
		func(ctx context.Context, c *Client) error { _, err := c.GetBareMetal(ctx, "b1"); return err }},
	{"bare metal date_created", `{"bare_metal":{"id":"b1","label":"x","date_created":"%s"}}`,
		func(ctx context.Context, c *Client) error { _, err := c.GetBareMetal(ctx, "b1"); return err }},
	{"vpc date_created", `{"vpc":{"id":"v1","region":"ewr","date_created":"%s"}}`,
		func(ctx context.Context, c *Client) error { _, err := c.GetVPC(ctx, "v1"); return err }},
	{"listed instance date_created", `{"instances":[{"id":"i1","label":"x","date_created":"%s"}],"meta":{"total":1,"links":{"next":""}}}`,
		func(ctx context.Context, c *Client) error {
			_, err := Collect(c.ListInstances(ctx, nil))
			return err
		}},
	{"metal plan disk", `{"plans_metal":[{"id":"vbm-4c-32gb","disk":"%s","monthly_cost":5}],"meta":{"total":1,"links":{"next":""}}}`,
		func(ctx context.Context, c *Client) error { _, err := Collect(c.ListMetalPlans(ctx)); return err }},
}

// A 2xx answer that echoes the Authorization header into a field (a
// misbehaving proxy or API), literally or with JSON escapes: the decoder
// quotes the value it could not parse ("unrecognised date \"<key>\""), and
// the *DecodeError must not carry it in any formatted form.
func TestKeyEchoedInA2xxFieldNeverReachesTheDecodeError(t *testing.T) {
	spellings := map[string]func(string) string{
		"literal": func(s string) string { return s },
		"escaped": escapeFirst,
	}
	for _, f := range echoedFields {
		for spelling, spell := range spellings {
			t.Run(f.name+" "+spelling, func(t *testing.T) {
				srv := echoServer(t, f.body, spell)
				c := New(echoKey, WithBaseURL(srv.URL), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
					WithRateLimit(0, 0), WithRetry(1, 0, 0))
				err := f.call(context.Background(), c)
				var de *DecodeError
				require.ErrorAs(t, err, &de)
				for e := error(de); e != nil; e = errors.Unwrap(e) {
					text := fmt.Sprintf("%v %+v %#v %s", e, e, e, e)
					assert.NotContains(t, text, echoKey[4:], "the key reached the error: %v", e)
					assert.NotContains(t, text, escapeFirst(echoKey)[:12], "the escaped key reached the error: %v", e)
				}
				assert.Contains(t, err.Error(), "[redacted]")
			})
		}
	}
}

// A next cursor that echoes the key and repeats: the ErrRepeatedCursor
// error names the cursor without the key, and still matches both classes.
func TestRepeatedCursorErrorHasNoKey(t *testing.T) {
	srv := echoServer(t, `{"instances":[{"id":"i1","label":"x"}],"meta":{"total":0,"links":{"next":"c-%s"}}}`,
		func(s string) string { return s })
	c := New(echoKey, WithBaseURL(srv.URL), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
		WithRateLimit(0, 0), WithRetry(1, 0, 0))
	_, err := Collect(c.ListInstances(context.Background(), nil))
	require.ErrorIs(t, err, ErrRepeatedCursor)
	require.ErrorIs(t, err, ErrEndlessList)
	assert.NotContains(t, fmt.Sprintf("%v %+v", err, err), echoKey)
	assert.Contains(t, err.Error(), `cursor "c-[redacted]"`)
}

// A value that does not hold the key is still quoted, so a decode error
// stays useful.
func TestDecodeErrorStillQuotesOtherValues(t *testing.T) {
	srv := echoServer(t, `{"instance":{"id":"i1","label":"x","date_created":"yesterday%s"}}`,
		func(string) string { return "" })
	c := New(echoKey, WithBaseURL(srv.URL), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
		WithRateLimit(0, 0), WithRetry(1, 0, 0))
	_, err := c.GetInstance(context.Background(), "i1")
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Contains(t, err.Error(), `unrecognised date "yesterday"`)
}
