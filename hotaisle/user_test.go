package hotaisle

import (
	"context"
	"errors"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckTellsApartKeyPermissionAndTeam(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"bad key", 401, `"Unauthorized"`, fleet.ErrUnauthorized},
		{"no permission", 403, `"Forbidden: Permission denied"`, fleet.ErrForbidden},
		{"unknown team", 200, `{"user": {"name": "J", "email": "j@x", "created": "2025-08-01T12:00:00Z"},
			"teams": [{"handle": "other", "name": "Other", "roles": ["user"], "effective_roles": ["user"]},
			          {"handle": "invited", "name": "I", "roles": [], "effective_roles": [], "invitation": true}]}`, fleet.ErrNotFound},
	}
	var got []error
	for _, tc := range cases {
		c, m := newMock(t)
		m.on("GET", "/user/", tc.status, tc.body)
		team, err := c.Check(context.Background())
		assert.Nil(t, team, tc.name)
		for _, class := range []error{fleet.ErrUnauthorized, fleet.ErrForbidden, fleet.ErrNotFound} {
			assert.Equal(t, class == tc.want, errors.Is(err, class), "%s: %v", tc.name, class)
		}
		got = append(got, err)
	}
	var ute *UnknownTeamError
	require.ErrorAs(t, got[2], &ute)
	assert.Equal(t, []string{"other"}, ute.Known, "invitations are not usable teams")
	assert.Contains(t, ute.Error(), `unknown team "acme"`)
}

func TestCheckReturnsTheTeamAndChecksRoles(t *testing.T) {
	c, m := newMock(t)
	m.on("GET", "/user/", 200, e10User)
	team, err := c.Check(context.Background(), RoleOperator)
	require.NoError(t, err)
	assert.Equal(t, "acme", team.Handle)
	assert.Equal(t, int64(1), team.MaximumBareMetalServers)

	team, err = c.Check(context.Background(), RoleOperator, RolePurchaser)
	var mre *MissingRoleError
	require.ErrorAs(t, err, &mre)
	assert.ErrorIs(t, err, fleet.ErrForbidden)
	assert.Equal(t, []string{RolePurchaser}, mre.Missing)
	assert.Equal(t, "acme", team.Handle, "the team is returned with the role error")
}

func TestCheckRefusesAnUnacceptedInvitation(t *testing.T) {
	c, m := newMock(t)
	m.on("GET", "/user/", 200, `{"user": {"name": "J", "email": "j@x", "created": "2025-08-01T12:00:00Z"},
		"teams": [{"handle": "acme", "name": "Acme", "roles": ["operator"], "effective_roles": ["operator"], "invitation": true}]}`)
	_, err := c.Check(context.Background())
	var ute *UnknownTeamError
	require.ErrorAs(t, err, &ute)
	assert.True(t, ute.Invitation)
	assert.ErrorIs(t, err, fleet.ErrNotFound)
}

func TestGetTeamUnknownIsNotFound(t *testing.T) {
	c, m := newMock(t)
	m.on("GET", "/teams/acme/", 404, `"Not Found: Resource not found"`)
	_, err := c.GetTeam(context.Background())
	assert.ErrorIs(t, err, fleet.ErrNotFound)
}
