package hotaisle

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// Team and user roles (swagger enums). Provisioning and releasing need the
// team role RoleOperator; adding SSH keys needs the API key's user role
// RoleOwner.
const (
	RoleOwner     = "owner"
	RolePurchaser = "purchaser"
	RoleOperator  = "operator"
	RoleUser      = "user"
)

// User is the account behind the key (swagger User).
type User struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	// Created is the account creation time; zero when absent or unparsable.
	Created time.Time `json:"created"`
}

// UnmarshalJSON decodes leniently: a date-time that is "", null or not
// RFC 3339 is the zero time.
func (u *User) UnmarshalJSON(b []byte) error {
	type plain User
	v := struct {
		*plain
		Created flexTime `json:"created"`
	}{plain: (*plain)(u)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	u.Created = time.Time(v.Created)
	return nil
}

// Team is a team as the key sees it (swagger Team + UserTeam).
type Team struct {
	// Handle is the id used in paths, e.g. "acme".
	Handle      string `json:"handle"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// MaximumVirtualMachines is the team's VM limit (over it, provision
	// answers 401); 0 when not given.
	MaximumVirtualMachines int64 `json:"maximum_virtual_machines,omitempty"`
	// MaximumBareMetalServers is the team's bare-metal limit (over it,
	// reserve answers 403).
	MaximumBareMetalServers int64 `json:"maximum_bare_metal_servers,omitempty"`
	// Roles are the user's roles on the team.
	Roles []string `json:"roles,omitempty"`
	// EffectiveRoles are the roles this key has after API-key restrictions.
	EffectiveRoles []string `json:"effective_roles,omitempty"`
	// Invitation is true while the membership is an unaccepted invitation.
	Invitation bool `json:"invitation,omitempty"`
}

// HasRole reports whether the key may act with role on the team: role is in
// EffectiveRoles (or in Roles when the API gave no EffectiveRoles).
func (t *Team) HasRole(role string) bool {
	if t.EffectiveRoles != nil {
		return slices.Contains(t.EffectiveRoles, role)
	}
	return slices.Contains(t.Roles, role)
}

// TeamMember is a member or pending invitee of a team (swagger TeamMember).
type TeamMember struct {
	Name       string    `json:"name"`
	Email      string    `json:"email"`
	Created    time.Time `json:"created"`
	Roles      []string  `json:"roles"`
	Invitation bool      `json:"invitation,omitempty"`
}

// UnmarshalJSON decodes leniently: a date-time that is "", null or not
// RFC 3339 is the zero time.
func (m *TeamMember) UnmarshalJSON(b []byte) error {
	type plain TeamMember
	v := struct {
		*plain
		Created flexTime `json:"created"`
	}{plain: (*plain)(m)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	m.Created = time.Time(v.Created)
	return nil
}

// TeamDetails is GET /teams/{team}/ (swagger UserTeamDetails). Its VMs and
// servers are the base objects: their specs are zero.
type TeamDetails struct {
	Team
	Members          []TeamMember `json:"members,omitempty"`
	VirtualMachines  []VM         `json:"virtual_machines,omitempty"`
	BareMetalServers []BareMetal  `json:"bare_metal_servers,omitempty"`
}

// UserInfo is GET /user/ (swagger GetUserResponse).
type UserInfo struct {
	User User `json:"user"`
	// Teams are the teams the user belongs to or is invited to.
	Teams []Team `json:"teams"`
}

// UnknownTeamError is Check's answer when the key works but the Client's
// team is not among the user's teams (or is only an unaccepted invitation).
// It answers errors.Is(err, fleet.ErrNotFound).
type UnknownTeamError struct {
	// Team is the handle the Client was built with.
	Team string
	// Known are the handles the key can use (the API key cut out, should
	// the answer echo it).
	Known []string
	// Invitation is true when Team is an invitation not accepted yet.
	Invitation bool
}

func (e *UnknownTeamError) Error() string {
	if e.Invitation {
		return fmt.Sprintf("hotaisle: team %q: invitation not accepted", e.Team)
	}
	return fmt.Sprintf("hotaisle: unknown team %q (the key has: %s)", e.Team, strings.Join(e.Known, ", "))
}

// Is makes UnknownTeamError answer fleet.ErrNotFound.
func (e *UnknownTeamError) Is(target error) bool { return target == fleet.ErrNotFound }

// MissingRoleError is Check's answer when the key lacks a required team role.
// It answers errors.Is(err, fleet.ErrForbidden).
type MissingRoleError struct {
	Team string
	// Missing are the required roles the key does not have.
	Missing []string
	// Have are the key's effective roles on the team (the API key cut out,
	// should the answer echo it).
	Have []string
}

func (e *MissingRoleError) Error() string {
	return fmt.Sprintf("hotaisle: team %q: key lacks role(s) %s (has: %s)", e.Team,
		strings.Join(e.Missing, ", "), strings.Join(e.Have, ", "))
}

// Is makes MissingRoleError answer fleet.ErrForbidden.
func (e *MissingRoleError) Is(target error) bool { return target == fleet.ErrForbidden }

// GetUser returns the user and their teams: GET /user/.
func (c *Client) GetUser(ctx context.Context) (*UserInfo, error) {
	var out UserInfo
	if err := c.object(ctx, http.MethodGet, "/user/", nil, nil, &out, "teams", func() bool { return out.Teams != nil }); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListTeams returns the teams the key has a role on: GET /teams/.
func (c *Client) ListTeams(ctx context.Context) ([]Team, error) {
	return list(ctx, c, "/teams/", "handle", func(t *Team) string { return t.Handle })
}

// GetTeam returns the Client's team with members and resources: GET
// /teams/{team}/. fleet.ErrNotFound (404) for an unknown team.
func (c *Client) GetTeam(ctx context.Context) (*TeamDetails, error) {
	p, err := c.teamPath()
	if err != nil {
		return nil, err
	}
	var out TeamDetails
	if err := c.object(ctx, http.MethodGet, p, nil, nil, &out, "handle", func() bool { return out.Handle != "" }); err != nil {
		return nil, err
	}
	return &out, nil
}

// Check validates the key and the team with one call (GET /user/), as dstack
// does, and returns the team. It tells apart three failures:
//   - a bad key: *APIError answering fleet.ErrUnauthorized (401);
//   - a key without permission: *APIError answering fleet.ErrForbidden (403),
//     or *MissingRoleError (also fleet.ErrForbidden) when the key lacks one
//     of the required team roles, e.g. Check(ctx, RoleOperator);
//   - an unknown team: *UnknownTeamError answering fleet.ErrNotFound.
func (c *Client) Check(ctx context.Context, required ...string) (*Team, error) {
	info, err := c.GetUser(ctx)
	if err != nil {
		return nil, err
	}
	var known []string
	for i := range info.Teams {
		t := &info.Teams[i]
		if t.Handle != c.team {
			if !t.Invitation {
				known = append(known, c.api.Redact(t.Handle))
			}
			continue
		}
		if t.Invitation {
			return nil, &UnknownTeamError{Team: c.team, Invitation: true}
		}
		var missing []string
		for _, r := range required {
			if !t.HasRole(r) {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			have := make([]string, len(t.EffectiveRoles))
			for i, r := range t.EffectiveRoles {
				have[i] = c.api.Redact(r)
			}
			return t, &MissingRoleError{Team: c.team, Missing: missing, Have: have}
		}
		return t, nil
	}
	return nil, &UnknownTeamError{Team: c.team, Known: known}
}
