package hotaisle

import (
	"errors"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endpoint is one client call whose 2xx answer carries an object or a list.
type endpoint struct {
	route string // "METHOD /api/..." of the shaped server
	call  func(t *testing.T, c *Client) error
}

func errOf[T any](_ T, err error) error { return err }

var bodyEndpoints = []endpoint{
	{"GET /api/teams/acme/virtual_machines/available/", func(t *testing.T, c *Client) error { return errOf(c.ListVMTypes(t.Context())) }},
	{"GET /api/teams/acme/bare_metal/available/", func(t *testing.T, c *Client) error { return errOf(c.ListBareMetalTypes(t.Context())) }},
	{"POST /api/teams/acme/virtual_machines/", func(t *testing.T, c *Client) error {
		return errOf(c.ProvisionVM(t.Context(), VMProvisionRequest{VMSpecs: VMSpecs{CPUCores: 13}}))
	}},
	{"GET /api/teams/acme/virtual_machines/vm1/", func(t *testing.T, c *Client) error { return errOf(c.GetVM(t.Context(), "vm1")) }},
	{"GET /api/teams/acme/virtual_machines/", func(t *testing.T, c *Client) error { return errOf(c.ListVMs(t.Context())) }},
	{"GET /api/teams/acme/virtual_machines/vm1/state/", func(t *testing.T, c *Client) error { return errOf(c.GetVMState(t.Context(), "vm1")) }},
	{"POST /api/teams/acme/bare_metal/", func(t *testing.T, c *Client) error {
		return errOf(c.ReserveBareMetal(t.Context(), BareMetalReservation{Specs: BareMetalSpecs{CPUCores: 104}}))
	}},
	{"GET /api/teams/acme/bare_metal/bm1/", func(t *testing.T, c *Client) error { return errOf(c.GetBareMetal(t.Context(), "bm1")) }},
	{"GET /api/teams/acme/bare_metal/", func(t *testing.T, c *Client) error { return errOf(c.ListBareMetal(t.Context())) }},
	{"GET /api/teams/acme/bare_metal/bm1/power/", func(t *testing.T, c *Client) error { return errOf(c.GetBareMetalPower(t.Context(), "bm1")) }},
	{"POST /api/user/ssh_keys/", func(t *testing.T, c *Client) error {
		_, _, err := c.AddSSHKey(t.Context(), testAuthorizedKey(t))
		return err
	}},
	{"GET /api/user/ssh_keys/", func(t *testing.T, c *Client) error { return errOf(c.ListSSHKeys(t.Context())) }},
	{"GET /api/user/", func(t *testing.T, c *Client) error { return errOf(c.GetUser(t.Context())) }},
	{"GET /api/teams/", func(t *testing.T, c *Client) error { return errOf(c.ListTeams(t.Context())) }},
	{"GET /api/teams/acme/", func(t *testing.T, c *Client) error { return errOf(c.GetTeam(t.Context())) }},
}

// Bodies a 2xx may carry that promise nothing: nothing at all, an empty
// object, a JSON null, an error message sent with 200 (as a JSON string or
// plain text), an HTML page, a cut-short answer.
var hollowBodies = []string{``, `{}`, `null`, `"Internal Server Error"`, `Internal Server Error`,
	`<html><body>OK</body></html>`, `[{"name":"enc1-gpuvm022"`}

// Every endpoint that promises an object or a list refuses a 2xx without it
// with a *DecodeError: no empty VM, no empty list from a hollow success.
func TestEveryEndpointRefusesAHollowSuccess(t *testing.T) {
	for _, ep := range bodyEndpoints {
		for _, body := range hollowBodies {
			s, c := newShaped(t, map[string]reply{ep.route: {200, body}})
			err := ep.call(t, c)
			var de *DecodeError
			require.True(t, errors.As(err, &de), "%s answering %q: %v", ep.route, body, err)
			assert.Equal(t, 1, s.count(ep.route), ep.route)
		}
	}
}

// A list whose items lack their name is refused; a real empty list is an
// empty list.
func TestListsCheckTheirItems(t *testing.T) {
	_, c := newShaped(t, map[string]reply{
		"GET /api/teams/acme/virtual_machines/": {200, `[{"name":"a","ip_address":"203.0.113.1"},{"ip_address":"203.0.113.2"}]`},
		"GET /api/teams/acme/bare_metal/":       {200, `[]`},
	})
	_, err := c.ListVMs(t.Context())
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.EqualError(t, err, "hotaisle: GET /teams/acme/virtual_machines/: decode response: item 1 has no VM name")
	bms, err := c.ListBareMetal(t.Context())
	require.NoError(t, err)
	assert.Empty(t, bms)
}

// Provider.Create never returns an instance without an ID: a provision
// answered 200 with nothing is a *DecodeError (ambiguous: the recovery looks
// for the VM, and finds none here).
func TestProviderCreateNeverReturnsAnInstanceWithoutID(t *testing.T) {
	for _, body := range []string{``, `{}`, `"OK"`} {
		s, c := newShaped(t, map[string]reply{
			"POST /api/teams/acme/virtual_machines/": {200, body},
			"GET /api/teams/acme/virtual_machines/":  {200, `[]`},
		})
		p := NewProvider(c)
		inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: fleet.Offer{InstanceType: "vm-mi300x-1",
			ProviderData: VMSpecs{CPUCores: 13}}, Label: fleet.Label{Fleet: "x", RequestID: "0123456789ab"}})
		var de *DecodeError
		require.ErrorAs(t, err, &de, "%q", body)
		assert.Empty(t, inst.ID)
		assert.Equal(t, 2, s.count("GET /api/teams/acme/virtual_machines/"), "first list, then the recovery's")
	}
}
