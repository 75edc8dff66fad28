package sim_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

func TestHotAisleRoutes(t *testing.T) {
	h := sim.NewHotAisle()
	team, vm, bm := "/api/teams/{team}/", "/api/teams/{team}/virtual_machines/{vm}/", "/api/teams/{team}/bare_metal/{server}/"
	want := []string{
		"GET /api/user/", "GET /api/teams/", "GET " + team, "GET " + team + "balance/",
		"GET /api/user/ssh_keys/", "POST /api/user/ssh_keys/", "DELETE /api/user/ssh_keys/{fingerprint}/",
		"GET " + team + "virtual_machines/", "POST " + team + "virtual_machines/",
		"GET " + team + "virtual_machines/available/", "GET " + vm, "PATCH " + vm, "DELETE " + vm,
		"GET " + vm + "state/", "POST " + vm + "start/", "POST " + vm + "stop/", "POST " + vm + "shutdown/",
		"POST " + vm + "reboot/", "POST " + vm + "hard-reset/",
		"GET " + team + "bare_metal/", "POST " + team + "bare_metal/", "GET " + team + "bare_metal/available/",
		"GET " + bm, "PATCH " + bm, "DELETE " + bm, "GET " + bm + "power/",
		"POST " + bm + "power/power_on/", "POST " + bm + "power/graceful_shutdown/",
		"POST " + bm + "power/force_shutdown/", "POST " + bm + "power/warm_reboot/",
		"POST " + bm + "power/cold_reboot/", "POST " + bm + "power/ac_reset/",
	}
	assert.ElementsMatch(t, want, h.Routes())
	for _, r := range h.Routes() {
		assert.True(t, strings.HasSuffix(r, "/"), r)
	}
}

// Every path ends in "/"; without it (or unclean) the answer is 404 in the
// Hot Aisle dialect, never a redirect, in memory and over real HTTP.
func TestHotAisleTrailingSlashIs404NotRedirect(t *testing.T) {
	x := haNew(t)
	vm := x.provision(1)
	paths := []string{
		"/api/user", "/api/teams", haTeamPath[:len(haTeamPath)-1], haTeamPath + "virtual_machines",
		haTeamPath + "virtual_machines/available", haTeamPath + "virtual_machines/" + vm.Name,
		haTeamPath + "virtual_machines/" + vm.Name + "/state", "/api//user/", "/api/./user/",
		"/api/teams/x/../" + sim.DefaultTeam + "/", "/api/nothing/", "/v2/instances", "/",
	}
	srv := httptest.NewServer(x.h)
	defer srv.Close()
	noRedirect := func(*http.Request, []*http.Request) error { return errors.New("redirected") }
	clients := map[string]*http.Client{
		haBase:  {Transport: x.c.Transport, CheckRedirect: noRedirect},
		srv.URL: {CheckRedirect: noRedirect},
	}
	for base, c := range clients {
		for _, p := range paths {
			r, err := http.NewRequest("GET", base+p, nil)
			require.NoError(t, err)
			r.Header.Set("Authorization", "Token "+sim.DefaultAPIKey)
			resp, err := c.Do(r)
			require.NoError(t, err, p)
			data := make([]byte, 256)
			n, _ := resp.Body.Read(data)
			resp.Body.Close()
			assert.Equal(t, 404, resp.StatusCode, "%s%s", base, p)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), p)
			assert.Equal(t, "Not Found: Resource not found", haMsg(t, data[:n]), p)
		}
	}
	// A served path with a method it does not serve is 404 too.
	x.fail("PUT", "/api/user/", nil, 404, "Not Found: Resource not found")
	x.fail("DELETE", haTeamPath+"virtual_machines/", nil, 404, "Not Found: Resource not found")
	calls := x.h.Calls()
	last := calls[len(calls)-1]
	assert.Equal(t, 404, last.Status)
	assert.Equal(t, "", last.Route)
}

func TestHotAisleAuth(t *testing.T) {
	x := haNew(t, sim.WithAPIKey("6ddfaa4539b4c7e046fe4b94.ee70"))
	for auth, want := range map[string]int{
		"Token 6ddfaa4539b4c7e046fe4b94.ee70":  200, // the documented form
		"6ddfaa4539b4c7e046fe4b94.ee70":        200, // the official CLI's bare key
		"Bearer 6ddfaa4539b4c7e046fe4b94.ee70": 401,
		"Token 6ddfaa4539b4c7e046fe4b94.ee71":  401,
		"Token " + sim.DefaultAPIKey:           401,
		"":                                     401,
	} {
		resp, data := x.req("GET", "/api/user/", auth, nil)
		assert.Equal(t, want, resp.StatusCode, "auth %q", auth)
		if want == 401 {
			assert.Equal(t, "Unauthorized", haMsg(t, data))
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		}
	}
}

// A bad key (401), a team the key has no role on (404) and a key without the
// operator role (403) can be told apart.
func TestHotAisleTeamAndRoles(t *testing.T) {
	x := haNew(t, sim.WithTeam("acme"))
	x.fail("GET", "/api/teams/other/virtual_machines/", nil, 404, "Not Found: Resource not found")
	x.fail("POST", "/api/teams/other/virtual_machines/", haGPUSpec(1), 404, "Not Found: Resource not found")
	x.ok("GET", "/api/teams/acme/virtual_machines/", nil, 200, nil)

	ro := haNew(t, sim.WithHotAisleUserRoleOnly())
	ro.ok("GET", haTeamPath+"virtual_machines/available/", nil, 200, nil)
	ro.ok("GET", "/api/user/ssh_keys/", nil, 200, nil)
	ro.fail("POST", haTeamPath+"virtual_machines/", haGPUSpec(1), 403, "Forbidden: Permission denied")
	ro.fail("POST", haTeamPath+"bare_metal/", map[string]any{"specs": map[string]any{"cpu_cores": 104}},
		403, "Forbidden: Permission denied")
	ro.fail("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": "x"}, 403, "Forbidden: Permission denied")
	ro.fail("DELETE", haTeamPath+"virtual_machines/enc1-gpuvm001/", nil, 403, "Forbidden: Permission denied")
	var teams []struct {
		Handle         string   `json:"handle"`
		EffectiveRoles []string `json:"effective_roles"`
	}
	ro.ok("GET", "/api/teams/", nil, 200, &teams)
	require.Len(t, teams, 1)
	assert.Equal(t, []string{"user"}, teams[0].EffectiveRoles)
}

func TestHotAisleUserAndTeams(t *testing.T) {
	x := haNew(t, sim.WithTeam("acme"))
	var user struct {
		User struct {
			Email string `json:"email"`
		} `json:"user"`
		Teams []struct {
			Handle         string   `json:"handle"`
			MaxVMs         int      `json:"maximum_virtual_machines"`
			MaxBareMetal   int      `json:"maximum_bare_metal_servers"`
			Roles          []string `json:"roles"`
			EffectiveRoles []string `json:"effective_roles"`
		} `json:"teams"`
	}
	x.ok("GET", "/api/user/", nil, 200, &user)
	assert.NotEmpty(t, user.User.Email)
	require.Len(t, user.Teams, 1)
	assert.Equal(t, "acme", user.Teams[0].Handle)
	assert.Equal(t, sim.DefaultHotAisleVMLimit, user.Teams[0].MaxVMs)
	assert.Equal(t, sim.DefaultHotAisleBareMetalLimit, user.Teams[0].MaxBareMetal)
	assert.Contains(t, user.Teams[0].EffectiveRoles, "operator")

	var vm haVM
	x.ok("POST", "/api/teams/acme/virtual_machines/", haGPUSpec(1), 200, &vm)
	x.h.SetVMLimit(3)
	var team struct {
		Handle          string `json:"handle"`
		MaxVMs          int    `json:"maximum_virtual_machines"`
		VirtualMachines []struct {
			Name string `json:"name"`
		} `json:"virtual_machines"`
		BareMetal []any `json:"bare_metal_servers"`
		Members   []any `json:"members"`
	}
	x.ok("GET", "/api/teams/acme/", nil, 200, &team)
	assert.Equal(t, "acme", team.Handle)
	assert.Equal(t, 3, team.MaxVMs)
	require.Len(t, team.VirtualMachines, 1)
	assert.Equal(t, vm.Name, team.VirtualMachines[0].Name)
	assert.NotNil(t, team.BareMetal)
	assert.Len(t, team.Members, 1)
}
