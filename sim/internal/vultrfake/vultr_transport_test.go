package vultrfake

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vultrWalk follows next cursors of a list and returns the ids in order.
func vultrWalk(h *vultrT, path, name string) (ids []string, pages int) {
	cursor := ""
	for {
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		m := h.obj("GET", p, nil, http.StatusOK)
		pages++
		for _, x := range m[name].([]any) {
			ids = append(ids, x.(map[string]any)["id"].(string))
		}
		links := m["meta"].(map[string]any)["links"].(map[string]any)
		if pages > 1 {
			assert.NotEmpty(h.t, links["prev"])
		} else {
			assert.Equal(h.t, "", links["prev"])
		}
		cursor = links["next"].(string)
		if cursor == "" {
			return ids, pages
		}
		_, err := base64.StdEncoding.DecodeString(cursor)
		require.NoError(h.t, err, "cursor is base64")
	}
}

func TestVultrPagination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		ids, pages := vultrWalk(h, "/v2/plans?per_page=4", "plans")
		assert.Equal(t, 5, pages) // 19 plans
		var want []string
		for _, p := range DefaultVultrCatalog().Plans {
			want = append(want, p.ID)
		}
		assert.Equal(t, want, ids)
		m := h.obj("GET", "/v2/plans?per_page=4", nil, 200)
		assert.EqualValues(t, 19, m["meta"].(map[string]any)["total"])

		// Default page size 100, max 500.
		for i := 0; i < 120; i++ {
			h.create("vc2-1c-1gb", "ewr", map[string]any{"label": "p"})
		}
		m = h.obj("GET", "/v2/instances", nil, 200)
		assert.Len(t, m["instances"], 100)
		assert.NotEmpty(t, m["meta"].(map[string]any)["links"].(map[string]any)["next"])
		m = h.obj("GET", "/v2/instances?per_page=9999", nil, 200)
		assert.Len(t, m["instances"], 120)
		assert.Equal(t, "", m["meta"].(map[string]any)["links"].(map[string]any)["next"])

		// Servers gone between two pages (the cursor's own included) skip
		// nothing that remains.
		all, _ := vultrWalk(h, "/v2/instances?per_page=500", "instances")
		first := h.obj("GET", "/v2/instances?per_page=50", nil, 200)
		next := first["meta"].(map[string]any)["links"].(map[string]any)["next"].(string)
		for _, id := range all[50:55] {
			require.NoError(t, h.v.DestroyOutOfBand(id))
		}
		second := h.obj("GET", "/v2/instances?per_page=50&cursor="+url.QueryEscape(next), nil, 200)
		require.Len(t, second["instances"], 50)
		assert.Equal(t, all[55], second["instances"].([]any)[0].(map[string]any)["id"])
		assert.EqualValues(t, 115, second["meta"].(map[string]any)["total"])

		assert.Contains(t, h.fail("GET", "/v2/plans?per_page=abc", nil, 400), "per_page")
		assert.Equal(t, "Invalid cursor.", h.fail("GET", "/v2/plans?cursor=!!!", nil, 400))
		assert.Equal(t, "Invalid cursor.", h.fail("GET", "/v2/plans?cursor="+base64.StdEncoding.EncodeToString([]byte("x")), nil, 400))
	})
}

func TestVultrAuth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t, WithAPIKey("k-123"))
		h.key = ""
		assert.Equal(t, "Invalid API token.", h.fail("GET", "/v2/instances", nil, 401))
		h.key = DefaultAPIKey
		h.fail("GET", "/v2/instances", nil, 401)
		h.key = "k-123"
		h.obj("GET", "/v2/instances", nil, 200)
		h.key = ""
		for _, p := range []string{"/v2/plans", "/v2/plans-metal", "/v2/regions", "/v2/regions/ewr/availability"} {
			h.obj("GET", p, nil, 200)
		}
		h.fail("GET", "/v2/ssh-keys", nil, 401)
		h.fail("GET", "/v2/vpcs", nil, 401)
		// A token scheme other than Bearer is refused.
		req, _ := http.NewRequest("GET", "https://api.vultr.com/v2/instances", nil)
		req.Header.Set("Authorization", "Token k-123")
		resp, err := h.c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 401, resp.StatusCode)
	})
}

func TestVultrRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t, WithVultrRateLimit(DefaultVultrRateLimit, DefaultVultrRateLimit))
		for i := 0; i < 30; i++ {
			h.obj("GET", "/v2/instances", nil, 200)
		}
		st, data, hdr := h.do("GET", "/v2/instances", nil)
		require.Equal(t, 429, st)
		assert.Equal(t, "1", hdr.Get("Retry-After"))
		assert.Contains(t, vultrErrorBody(t, 429, data, hdr), "Rate limit")
		// Another key (here: none, on a public route) has its own bucket.
		h.key = ""
		h.obj("GET", "/v2/plans", nil, 200)
		h.key = DefaultAPIKey
		time.Sleep(time.Second)
		for i := 0; i < 30; i++ {
			h.obj("GET", "/v2/instances", nil, 200)
		}
		h.fail("GET", "/v2/instances", nil, 429)
		// A steady rate just under 30/s passes.
		for i := 0; i < 60; i++ {
			time.Sleep(34 * time.Millisecond)
			h.obj("GET", "/v2/instances", nil, 200)
		}
		calls := h.v.Calls()
		assert.Equal(t, 429, calls[30].Status)
		assert.Equal(t, "GET /v2/instances", calls[30].Route)
	})
}

func TestVultrSqueezeRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		require.NoError(t, h.v.SqueezeRateLimit(0.5, time.Minute))
		h.obj("GET", "/v2/instances", nil, 200)
		_, _, hdr := h.do("GET", "/v2/instances", nil)
		assert.Equal(t, "2", hdr.Get("Retry-After"))
		time.Sleep(2 * time.Second)
		h.obj("GET", "/v2/instances", nil, 200)
		time.Sleep(time.Minute)
		for i := 0; i < 50; i++ {
			h.obj("GET", "/v2/instances", nil, 200) // back to the option's (unlimited) rate
		}
		assert.Error(t, h.v.SqueezeRateLimit(0, time.Minute))
	})
}

func TestVultrRoutesListed(t *testing.T) {
	v := NewVultr()
	routes := strings.Join(v.Routes(), "\n")
	for _, r := range []string{"GET /v2/plans", "GET /v2/plans-metal", "GET /v2/regions/{id}/availability",
		"POST /v2/instances", "PATCH /v2/instances/{id}", "POST /v2/instances/{id}/vpcs/attach",
		"POST /v2/bare-metals/{id}/vpcs/detach", "GET /v2/bare-metals/{id}/vpcs", "PUT /v2/vpcs/{id}",
		"DELETE /v2/ssh-keys/{id}", "POST /v2/bare-metals/{id}/halt"} {
		assert.Contains(t, routes, r)
	}
}
