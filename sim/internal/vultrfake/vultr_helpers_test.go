package vultrfake

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vultrT drives a Vultr fake through its in-memory client. Unless a test
// passes its own WithVultrRateLimit, the rate limit is off so that tests
// can make many calls at one instant of the bubble's clock.
type vultrT struct {
	t   *testing.T
	v   *Vultr
	c   *http.Client
	key string
}

func newVultrT(t *testing.T, opts ...Option) *vultrT {
	t.Helper()
	all := append([]Option{WithVultrRateLimit(0, 0)}, opts...)
	v := NewVultr(all...)
	return &vultrT{t: t, v: v, c: v.Client(), key: DefaultAPIKey}
}

// do sends a request; body is nil, a string (sent raw) or a value sent as
// JSON. It returns the status, the body and the headers.
func (h *vultrT) do(method, path string, body any) (int, []byte, http.Header) {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(h.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, "https://api.vultr.com"+path, rd)
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", "application/json")
	if h.key != "" {
		req.Header.Set("Authorization", "Bearer "+h.key)
	}
	resp, err := h.c.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, data, resp.Header
}

// obj sends a request, requires status want and decodes the body as an
// object (nil for an empty body).
func (h *vultrT) obj(method, path string, body any, want int) map[string]any {
	h.t.Helper()
	st, data, _ := h.do(method, path, body)
	require.Equal(h.t, want, st, "%s %s: %s", method, path, data)
	if len(data) == 0 {
		return nil
	}
	var m map[string]any
	require.NoError(h.t, json.Unmarshal(data, &m), string(data))
	return m
}

// fail sends a request and requires a Vultr error with status want; it
// returns the message.
func (h *vultrT) fail(method, path string, body any, want int) string {
	h.t.Helper()
	st, data, hdr := h.do(method, path, body)
	require.Equal(h.t, want, st, "%s %s: %s", method, path, data)
	return vultrErrorBody(h.t, want, data, hdr)
}

// vultrErrorBody checks the dialect {"error":"…","status":N} and returns the
// message.
func vultrErrorBody(t *testing.T, status int, data []byte, hdr http.Header) string {
	t.Helper()
	assert.Equal(t, "application/json", hdr.Get("Content-Type"))
	var e struct {
		Error  *string `json:"error"`
		Status *int    `json:"status"`
	}
	require.NoError(t, json.Unmarshal(data, &e), string(data))
	require.NotNil(t, e.Error, string(data))
	require.NotNil(t, e.Status, string(data))
	assert.Equal(t, status, *e.Status)
	assert.NotEmpty(t, *e.Error)
	return *e.Error
}

// create creates a server (instance or bare metal by the plan) and returns
// its object.
func (h *vultrT) create(plan, region string, extra map[string]any) map[string]any {
	h.t.Helper()
	body := map[string]any{"region": region, "plan": plan, "label": "t-" + plan, "os_id": 1743}
	for k, v := range extra {
		body[k] = v
	}
	path, key := "/v2/instances", "instance"
	if vultrIsMetal(plan) {
		path, key = "/v2/bare-metals", "bare_metal"
	}
	m := h.obj("POST", path, body, http.StatusAccepted)
	obj, ok := m[key].(map[string]any)
	require.True(h.t, ok, "no %q in %v", key, m)
	return obj
}

// get reads a server by id.
func (h *vultrT) get(id string, metal bool) map[string]any {
	h.t.Helper()
	path, key := "/v2/instances/", "instance"
	if metal {
		path, key = "/v2/bare-metals/", "bare_metal"
	}
	return h.obj("GET", path+id, nil, http.StatusOK)[key].(map[string]any)
}

// vpc creates a VPC in region and returns its id.
func (h *vultrT) vpc(region string) string {
	h.t.Helper()
	m := h.obj("POST", "/v2/vpcs", map[string]any{"region": region, "description": "t",
		"v4_subnet": "", "v4_subnet_mask": 0}, http.StatusCreated)
	return m["vpc"].(map[string]any)["id"].(string)
}

// serverVPCs lists the VPC ids a server shows under …/{id}/vpcs.
func (h *vultrT) serverVPCs(base, id string) []string {
	h.t.Helper()
	m := h.obj("GET", base+"/"+id+"/vpcs", nil, http.StatusOK)
	var out []string
	for _, x := range m["vpcs"].([]any) {
		out = append(out, x.(map[string]any)["id"].(string))
	}
	return out
}

// vultrSleepTo sleeps (in the bubble) until d after start.
func vultrSleepTo(start time.Time, d time.Duration) {
	time.Sleep(time.Until(start.Add(d)))
}
