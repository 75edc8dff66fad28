package vultrfake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVultrBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		id := h.v.mustSeed(t, VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Age: time.Hour})
		big := `{"region":"ewr","label":"` + strings.Repeat("x", core.MaxBodyBytes) + `"}`
		cases := []struct {
			method, path string
			body         any
			status       int
		}{
			{"POST", "/v2/instances", `{"region":`, 400},
			{"POST", "/v2/instances", `{"region":5,"plan":"vc2-1c-1gb"}`, 400},
			{"POST", "/v2/instances", `{"tags":"a"}`, 400},
			{"POST", "/v2/instances", `[]`, 400},
			{"POST", "/v2/instances", `null`, 400},
			{"POST", "/v2/instances", ``, 400},
			{"POST", "/v2/instances", big, 413},
			{"POST", "/v2/bare-metals", `{"os_id":"1743"}`, 400},
			{"PATCH", "/v2/instances/" + id, `{"label":7}`, 400},
			{"PATCH", "/v2/instances/" + id, `{"tags":[1]}`, 400},
			{"POST", "/v2/instances/" + id + "/vpcs/attach", `{"vpc_id":[]}`, 400},
			{"POST", "/v2/instances/" + id + "/vpcs/detach", `nope`, 400},
			{"POST", "/v2/vpcs", `{"region":"ewr","v4_subnet_mask":"24"}`, 400},
			{"PUT", "/v2/vpcs/x", `{"description":1}`, 400},
			{"POST", "/v2/ssh-keys", `{"name":{}}`, 400},
			{"GET", "/v2/nope", nil, 404},
			{"GET", "/v2/instances/", nil, 404},
			{"PUT", "/v2/instances/" + id, `{}`, 404},
			{"GET", "/v2/vpc2", nil, 404},
			{"DELETE", "/v2/plans", nil, 404},
		}
		for _, c := range cases {
			st, data, hdr := h.do(c.method, c.path, c.body)
			require.Equal(t, c.status, st, "%s %s %.60v: %s", c.method, c.path, c.body, data)
			vultrErrorBody(t, c.status, data, hdr)
		}
		// The server survived all of it.
		assert.Equal(t, "active", h.get(id, false)["status"])
		for _, c := range h.v.Calls() {
			assert.NotZero(t, c.Status)
		}
	})
}

// TestVultrOverHTTP serves the fake from a real listener.
func TestVultrOverHTTP(t *testing.T) {
	v := NewVultr(WithVultrRateLimit(0, 0))
	srv := httptest.NewServer(v)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/v2/vpcs", strings.NewReader(`{"region":"ewr"}`))
	req.Header.Set("Authorization", "Bearer "+DefaultAPIKey)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 201, resp.StatusCode)
	var m map[string]map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	assert.Equal(t, "ewr", m["vpc"]["region"])
}

// FuzzVultrCreate feeds arbitrary bodies to the request decoders of the
// create, update, attach, VPC and SSH-key routes: every answer is a
// success or a Vultr error body, never a panic. `go test` runs the seeds.
func FuzzVultrCreate(f *testing.F) {
	for _, s := range []string{
		`{"region":"ewr","plan":"vc2-1c-1gb","os_id":1743}`,
		`{"region":"ord","plan":"vbm-256c-2048gb-8-mi300x-gpu","image_id":"docker","attach_vpc":["x"]}`,
		`{"region":"ewr","plan":"vc2-1c-1gb","os_id":1743,"user_data":"I2Nsb3VkLWNvbmZpZwpzc2hfYXV0aG9yaXplZF9rZXlzOgogIC0geAo="}`,
		`{"region":"ewr","plan":"vcg-a100-1c-6g-4vram","app_id":1,"enable_vpc":true,"tags":null}`,
		`{"label":null,"tags":["a"],"attach_vpc":[""],"detach_vpc":["y"]}`,
		`{"vpc_id":""}`, `{"region":"ewr","v4_subnet":"10.0.0.0","v4_subnet_mask":8}`,
		`{"name":"k","ssh_key":"ssh-ed25519 AAAA"}`, `{"os_id":1e400}`, `{"plan":"\u0000"}`,
		`[`, `""`, `0`, `{}`, ``,
	} {
		f.Add(s)
	}
	v := NewVultr(WithVultrRateLimit(0, 0))
	vpc, _ := v.SeedVPC("ewr", "fuzz")
	id, _ := v.SeedServer(VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Age: time.Hour})
	routes := []struct{ method, path string }{
		{"POST", "/v2/instances"}, {"POST", "/v2/bare-metals"}, {"PATCH", "/v2/instances/" + id},
		{"POST", "/v2/instances/" + id + "/vpcs/attach"}, {"POST", "/v2/instances/" + id + "/vpcs/detach"},
		{"POST", "/v2/vpcs"}, {"PUT", "/v2/vpcs/" + vpc}, {"POST", "/v2/ssh-keys"},
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, r := range routes {
			req := httptest.NewRequest(r.method, r.path, bytes.NewBufferString(body))
			req.Header.Set("Authorization", "Bearer "+DefaultAPIKey)
			rec := httptest.NewRecorder()
			v.ServeHTTP(rec, req)
			if rec.Code >= 400 {
				var e vultrError
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), "%s %s: %s", r.method, r.path, rec.Body)
				require.NotEmpty(t, e.Error)
				require.Equal(t, rec.Code, e.Status)
			} else {
				require.Contains(t, []int{200, 201, 202, 204}, rec.Code)
			}
		}
	})
}
