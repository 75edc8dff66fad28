package hotaislefake

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// haUserCreated is when the fake's user account was created.
var haUserCreated = time.Date(2025, 8, 1, 12, 0, 0, 0, time.UTC)

type haUser struct {
	Name    string `json:"name"`
	Email   string `json:"email"`
	Created string `json:"created"`
}

// haUserTeam is the spec's UserTeam (Team + roles).
type haUserTeam struct {
	Handle         string   `json:"handle"`
	Name           string   `json:"name"`
	Description    string   `json:"description,omitempty"`
	MaxVMs         int64    `json:"maximum_virtual_machines"`
	MaxBareMetal   int64    `json:"maximum_bare_metal_servers"`
	Roles          []string `json:"roles"`
	EffectiveRoles []string `json:"effective_roles"`
}

type haTeamMember struct {
	Name    string   `json:"name"`
	Email   string   `json:"email"`
	Created string   `json:"created"`
	Roles   []string `json:"roles"`
}

// haTeamDetails is the spec's UserTeamDetails.
type haTeamDetails struct {
	haUserTeam
	Members          []haTeamMember      `json:"members"`
	BareMetalServers []haBareMetalServer `json:"bare_metal_servers"`
	VirtualMachines  []haVirtualMachine  `json:"virtual_machines"`
}

func (h *HotAisle) userTeam() haUserTeam {
	h.mu.Lock()
	defer h.mu.Unlock()
	roles := []string{"owner", "purchaser", "operator", "user"}
	if h.st.userRoleOnly {
		roles = []string{"user"}
	}
	return haUserTeam{Handle: h.cfg.Team, Name: "Sim Team", Description: "the sim.HotAisle team",
		MaxVMs: int64(h.st.vmLimit), MaxBareMetal: int64(h.st.bmLimit),
		Roles: roles, EffectiveRoles: roles}
}

func haTheUser() haUser {
	return haUser{Name: "Sim User", Email: "sim@hotaisle.test", Created: haTime(haUserCreated)}
}

func (h *HotAisle) getUser(w http.ResponseWriter, r *http.Request) {
	core.WriteJSON(w, http.StatusOK, map[string]any{"user": haTheUser(), "teams": []haUserTeam{h.userTeam()}})
}

func (h *HotAisle) getTeams(w http.ResponseWriter, r *http.Request) {
	core.WriteJSON(w, http.StatusOK, []haUserTeam{h.userTeam()})
}

func (h *HotAisle) getTeam(w http.ResponseWriter, r *http.Request) {
	if !h.teamOK(w, r, false) {
		return
	}
	ut := h.userTeam()
	u := haTheUser()
	d := haTeamDetails{haUserTeam: ut,
		Members:          []haTeamMember{{Name: u.Name, Email: u.Email, Created: u.Created, Roles: ut.Roles}},
		BareMetalServers: []haBareMetalServer{}, VirtualMachines: []haVirtualMachine{}}
	lag, now := core.LagOf(r), h.clock.Now()
	h.mu.Lock()
	for _, s := range h.st.all {
		if !s.deleted.IsZero() || haHidden(s, now, lag) {
			continue
		}
		if s.bare {
			d.BareMetalServers = append(d.BareMetalServers, s.bareMetalServer())
		} else {
			d.VirtualMachines = append(d.VirtualMachines, s.virtualMachine())
		}
	}
	h.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, d)
}

// teamOK checks the request's {team}: a team the key has no role on answers
// 404 "Not Found: Resource not found" (not 403, so that a client can tell a
// wrong handle from missing permissions); a mutation (operator role needed)
// by a key with only the user role answers 403. It writes the error and
// returns false.
func (h *HotAisle) teamOK(w http.ResponseWriter, r *http.Request, mutation bool) bool {
	if r.PathValue("team") != h.cfg.Team {
		haWriteError(w, http.StatusNotFound, "")
		return false
	}
	if mutation && h.readOnly() {
		haWriteError(w, http.StatusForbidden, "")
		return false
	}
	return true
}

// readOnly reports whether the key has only the user role.
func (h *HotAisle) readOnly() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st.userRoleOnly
}

// haDecode reads a JSON request body into v. A body over MaxBodyBytes
// answers 413, an empty or malformed one 400 "Bad Request: Invalid input", a
// value of the wrong type (a string for cpu_cores, an array for a VM's cpus)
// 422 "Unprocessable Entity: Invalid data format". Unknown fields are ignored,
// as Go's encoding/json (the real server's) does. It writes the error and
// returns false.
func haDecode(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			haWriteError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
			return false
		}
		haWriteError(w, http.StatusBadRequest, "")
		return false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		haWriteError(w, http.StatusBadRequest, "")
		return false
	}
	if err := json.Unmarshal(data, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			haWriteError(w, http.StatusUnprocessableEntity, "")
			return false
		}
		haWriteError(w, http.StatusBadRequest, "")
		return false
	}
	return true
}
