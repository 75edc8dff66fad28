package hotaisle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAPIKeyNeverLeaks(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, m := newMock(t, WithLogger(logger))
	secret := testKey[strings.IndexByte(testKey, '.')+1:]

	echo := func(status int) httpmock.Responder {
		return func(r *http.Request) (*http.Response, error) {
			// A hostile or buggy server that echoes the credentials back.
			return httpmock.NewStringResponse(status, fmt.Sprintf("%q", "bad header: "+r.Header.Get("Authorization")+" secret="+secret)), nil
		}
	}
	m.RegisterResponder("GET", testBase+"/user/", echo(401))
	m.RegisterResponder("GET", testBase+"/teams/acme/virtual_machines/vm1/", echo(500))
	m.RegisterResponder("GET", testBase+"/teams/acme/virtual_machines/", httpmock.NewErrorResponder(syscall.ECONNRESET))
	m.RegisterResponder("GET", testBase+"/teams/acme/bare_metal/", httpmock.NewStringResponder(200, `{"token":"`+testKey+`"`))

	ctx := context.Background()
	var errs []error
	_, err := c.Check(ctx)
	errs = append(errs, err)
	_, err = c.GetVM(ctx, "vm1")
	errs = append(errs, err)
	_, err = c.ListVMs(ctx)
	errs = append(errs, err)
	_, err = c.ListBareMetal(ctx)
	errs = append(errs, err)

	var out strings.Builder
	for _, v := range []any{c, *c} {
		fmt.Fprintf(&out, "%v %+v %#v %s %q\n", v, v, v, v, v)
	}
	for _, err := range errs {
		require.Error(t, err)
		fmt.Fprintf(&out, "%v %+v %#v %s\n", err, err, err, err)
		var ae *APIError
		if errors.As(err, &ae) {
			out.Write(ae.Body)
			out.WriteString(ae.Message)
		}
	}
	require.NotEmpty(t, logs.String(), "the logger did receive lines")
	for name, text := range map[string]string{"logs": logs.String(), "errors and String": out.String()} {
		assert.NotContains(t, text, testKey, name)
		assert.NotContains(t, text, secret, name)
	}
	assert.Contains(t, out.String(), "[redacted]")
}

func TestRedactIgnoresShortOrEmptyKeys(t *testing.T) {
	assert.Equal(t, []byte("abc"), redact([]byte("abc"), ""))
	assert.Equal(t, []byte("a.b"), redact([]byte("a.b"), "a.b"), "keys under 8 bytes are not searched")
	assert.Equal(t, "x [redacted] y", string(redact([]byte("x prefix12.secret-part-long y"), "prefix12.secret-part-long")))
}

// Check builds its errors from a 2xx answer: team handles and roles that
// echo the key reach UnknownTeamError and MissingRoleError redacted.
func TestCheckErrorsCarryNoEchoedKey(t *testing.T) {
	secret := testKey[strings.IndexByte(testKey, '.')+1:]
	var unknown *UnknownTeamError
	var missing *MissingRoleError
	for team, want := range map[string]any{"nope": &unknown, "acme": &missing} {
		c, m := newMock(t)
		c.team = team
		m.on("GET", "/user/", 200, `{"user": {"name": "J", "email": "j@x"},
			"teams": [{"handle": "acme", "name": "A", "roles": ["user"], "effective_roles": ["user-`+secret+`"]},
			          {"handle": "h-`+testKey+`", "name": "B", "roles": [], "effective_roles": []}]}`)
		_, err := c.Check(context.Background(), RoleOperator)
		require.ErrorAs(t, err, want, team)
		text := fmt.Sprintf("%v %+v %#v", err, err, err)
		assert.NotContains(t, text, secret, team)
		assert.Contains(t, text, "[redacted]", team)
	}
}
