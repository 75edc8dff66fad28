package vultr

import (
	"context"
	"errors"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endpoint is one client call whose 2xx answer carries an object or a list.
type endpoint struct {
	route string // "METHOD /path" of the shaped server
	call  func(ctx context.Context, c *Client) error
}

func collectErr[T any](seq func(yield func(T, error) bool)) error {
	_, err := Collect(seq)
	return err
}

var bodyEndpoints = []endpoint{
	{"GET /v2/plans", func(ctx context.Context, c *Client) error { return collectErr(c.ListPlans(ctx, nil)) }},
	{"GET /v2/plans-metal", func(ctx context.Context, c *Client) error { return collectErr(c.ListMetalPlans(ctx)) }},
	{"GET /v2/regions", func(ctx context.Context, c *Client) error { return collectErr(c.ListRegions(ctx)) }},
	{"GET /v2/regions/ewr/availability", func(ctx context.Context, c *Client) error {
		_, err := c.RegionAvailability(ctx, "ewr", "")
		return err
	}},
	{"POST /v2/instances", func(ctx context.Context, c *Client) error {
		_, err := c.CreateInstance(ctx, &InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb", OSID: 1743})
		return err
	}},
	{"GET /v2/instances/i1", func(ctx context.Context, c *Client) error { _, err := c.GetInstance(ctx, "i1"); return err }},
	{"GET /v2/instances", func(ctx context.Context, c *Client) error { return collectErr(c.ListInstances(ctx, nil)) }},
	{"PATCH /v2/instances/i1", func(ctx context.Context, c *Client) error {
		_, err := c.UpdateInstance(ctx, "i1", &InstanceUpdate{Label: "x"})
		return err
	}},
	{"GET /v2/instances/i1/vpcs", func(ctx context.Context, c *Client) error { return collectErr(c.ListInstanceVPCs(ctx, "i1")) }},
	{"POST /v2/bare-metals", func(ctx context.Context, c *Client) error {
		_, err := c.CreateBareMetal(ctx, &BareMetalCreate{Region: "ord", Plan: "vbm-4c-32gb", ImageID: "docker"})
		return err
	}},
	{"GET /v2/bare-metals/b1", func(ctx context.Context, c *Client) error { _, err := c.GetBareMetal(ctx, "b1"); return err }},
	{"GET /v2/bare-metals", func(ctx context.Context, c *Client) error { return collectErr(c.ListBareMetals(ctx, nil)) }},
	{"PATCH /v2/bare-metals/b1", func(ctx context.Context, c *Client) error {
		_, err := c.UpdateBareMetal(ctx, "b1", &BareMetalUpdate{Label: "x"})
		return err
	}},
	{"GET /v2/bare-metals/b1/vpcs", func(ctx context.Context, c *Client) error { return collectErr(c.ListBareMetalVPCs(ctx, "b1")) }},
	{"POST /v2/vpcs", func(ctx context.Context, c *Client) error {
		_, err := c.CreateVPC(ctx, &VPCCreate{Region: "ewr"})
		return err
	}},
	{"GET /v2/vpcs/v1", func(ctx context.Context, c *Client) error { _, err := c.GetVPC(ctx, "v1"); return err }},
	{"GET /v2/vpcs", func(ctx context.Context, c *Client) error { return collectErr(c.ListVPCs(ctx)) }},
	{"POST /v2/ssh-keys", func(ctx context.Context, c *Client) error {
		_, err := c.CreateSSHKey(ctx, "k", "ssh-ed25519 AAAA")
		return err
	}},
	{"GET /v2/ssh-keys/k1", func(ctx context.Context, c *Client) error { _, err := c.GetSSHKey(ctx, "k1"); return err }},
	{"GET /v2/ssh-keys", func(ctx context.Context, c *Client) error { return collectErr(c.ListSSHKeys(ctx)) }},
}

// Bodies a 2xx may carry that promise nothing: an error object (what a
// proxy or a failing backend sends with 200), an empty object, an HTML page,
// a cut-short answer, a JSON null, a bare string.
var hollowBodies = []string{`{}`, `{"error":"Internal server error","status":500}`, `<html><body>OK</body></html>`,
	`{"instances":[{"id":"a"`, `null`, `"ok"`, `[]`}

// Every endpoint that promises an object or a list refuses a 2xx without
// it with a *DecodeError, which a list never takes for its last page.
func TestEveryEndpointRefusesAHollowSuccess(t *testing.T) {
	for _, ep := range bodyEndpoints {
		bodies := append([]string{``}, hollowBodies...)
		if ep.route[:5] == "PATCH" {
			bodies = hollowBodies // an update may answer with no body
		}
		for _, body := range bodies {
			s, c := newShaped(t, map[string]reply{ep.route: {200, body, nil}})
			err := ep.call(t.Context(), c)
			var de *DecodeError
			require.True(t, errors.As(err, &de), "%s answering %q: %v", ep.route, body, err)
			assert.Equal(t, 1, s.count(ep.route), ep.route)
		}
	}
}

// An object or list item without its id is refused too.
func TestObjectsWithoutIDAreRefused(t *testing.T) {
	_, c := newShaped(t, map[string]reply{
		"POST /v2/instances":  {202, `{"instance":{"status":"pending","label":"x"}}`, nil},
		"GET /v2/bare-metals": {200, `{"bare_metals":[{"id":"a"},{"label":"no id"}],"meta":{"total":2,"links":{"next":""}}}`, nil},
	})
	_, err := c.CreateInstance(t.Context(), &InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb", OSID: 1743})
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Contains(t, err.Error(), `vultr: POST /v2/instances: decode response: the "instance" object has no id`)
	_, err = Collect(c.ListBareMetals(t.Context(), nil))
	require.ErrorAs(t, err, &de)
}

// Real empty lists stay empty lists, with or without meta; an update
// answered 202 with no body is nil, no error.
func TestRealEmptyAnswersStayEmpty(t *testing.T) {
	_, c := newShaped(t, map[string]reply{
		"GET /v2/instances":                {200, `{"instances":[],"meta":{"total":0,"links":{"next":"","prev":""}}}`, nil},
		"GET /v2/bare-metals/b1/vpcs":      {200, `{"vpcs":[]}`, nil},
		"GET /v2/regions/ewr/availability": {200, `{"available_plans":[]}`, nil},
		"PATCH /v2/instances/i1":           {202, ``, nil},
	})
	ctx := t.Context()
	insts, err := Collect(c.ListInstances(ctx, nil))
	require.NoError(t, err)
	assert.Empty(t, insts)
	atts, err := Collect(c.ListBareMetalVPCs(ctx, "b1"))
	require.NoError(t, err)
	assert.Empty(t, atts)
	plans, err := c.RegionAvailability(ctx, "ewr", "")
	require.NoError(t, err)
	assert.Empty(t, plans)
	in, err := c.UpdateInstance(ctx, "i1", &InstanceUpdate{Label: "x"})
	require.NoError(t, err)
	assert.Nil(t, in)
}

// Provider.Create never returns an instance without an id: a 202 without
// the object is the client's *DecodeError (the server may exist; the caller
// looks its label up).
func TestProviderCreateNeverReturnsAnInstanceWithoutID(t *testing.T) {
	for _, body := range []string{``, `{}`, `{"instance":{}}`, `{"error":"Internal server error","status":500}`} {
		_, c := newShaped(t, map[string]reply{"POST /v2/instances": {202, body, nil}})
		inst, err := NewProvider(c).Create(t.Context(), fleet.CreateRequest{Offer: vpcOffer(false),
			Label: fleet.Label{Fleet: "c", RequestID: "0123456789ab"}})
		var de *DecodeError
		require.ErrorAs(t, err, &de, "%q", body)
		assert.Empty(t, inst.ID)
	}
}

// The error rows seen through the provider: a repeated DELETE of a server
// being destroyed is fleet.ErrDeletePending; a console-deleted server's
// "invalid instance ID" is fleet.ErrNotFound; the instance limit is
// fleet.ErrQuotaExceeded.
func TestProviderErrorRowsThroughRealCalls(t *testing.T) {
	_, c := newShaped(t, map[string]reply{
		"DELETE /v2/instances/" + vmID: {400, `{"error":"Unable to destroy server: Server is already pending destruction","status":400}`, nil},
		"GET /v2/instances/gone":       {400, `{"error":"invalid instance ID","status":400}`, nil},
		"POST /v2/instances": {400, `{"error":"You have reached the maximum number of active virtual machines for this account. ` +
			`For security reasons, please contact our support team to have the limit raised","status":400}`, nil},
		"GET /v2/instances":   {200, `{"instances":[` + fixtureActiveInstanceObj + `]}`, nil},
		"GET /v2/bare-metals": {200, `{"bare_metals":[]}`, nil},
		"GET /v2/plans":       {200, `{"plans":[]}`, nil},
	})
	p := NewProvider(c)
	ctx := t.Context()
	_, err := p.List(ctx) // the provider learns that vmID is a VM
	require.NoError(t, err)
	err = p.Delete(ctx, vmID, fleet.DeleteOptions{})
	assert.ErrorIs(t, err, fleet.ErrDeletePending)
	_, err = p.Get(ctx, "gone")
	assert.ErrorIs(t, err, fleet.ErrNotFound)
	_, err = p.Create(ctx, fleet.CreateRequest{Offer: vpcOffer(false), Label: fleet.Label{Fleet: "c", RequestID: "0123456789ab"}})
	assert.ErrorIs(t, err, fleet.ErrQuotaExceeded)
}
