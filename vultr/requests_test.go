package vultr

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The JSON bodies and paths the client sends, checked against the shapes of
// /shared/api/vultr.md §2 and §7.

func query(t *testing.T, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	require.NoError(t, err)
	return q
}

func TestCreateInstanceRequestShape(t *testing.T) {
	c, mt := mockClient(t)
	got := record(t, mt, "POST", "/v2/instances", 202, fixtureCreateInstance)
	userData := []byte("#cloud-config\nruncmd: []\n")
	inst, err := c.CreateInstance(t.Context(), &InstanceCreate{
		Region: "ewr", Plan: "vcg-a100-3c-30g-20vram", Label: "fleet-7f3a-0", OSID: 1743,
		Tags: []string{"gpufleet", "fleet=7f3a"}, UserData: userData,
		AttachVPC: []string{"6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90"},
	})
	require.NoError(t, err)
	require.Len(t, *got, 1)
	s := (*got)[0]
	assert.Equal(t, "application/json", s.ContentType)
	assert.Equal(t, "Bearer "+testKey, s.Auth)
	assert.JSONEq(t, `{"region":"ewr","plan":"vcg-a100-3c-30g-20vram","label":"fleet-7f3a-0","os_id":1743,
		"tags":["gpufleet","fleet=7f3a"],"user_data":"I2Nsb3VkLWNvbmZpZwpydW5jbWQ6IFtdCg==",
		"attach_vpc":["6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90"]}`, string(s.Body))
	assert.Equal(t, base64.StdEncoding.EncodeToString(userData), "I2Nsb3VkLWNvbmZpZwpydW5jbWQ6IFtdCg==")
	assert.Equal(t, "b3e1c0a2-5d4f-4e21-8c77-2f0a9d6e4b11", inst.ID)
	assert.Equal(t, "pending", inst.Status)
}

func TestCreateInstanceWithImageAndMinimalFields(t *testing.T) {
	c, mt := mockClient(t)
	got := record(t, mt, "POST", "/v2/instances", 202, fixtureCreateInstance)
	_, err := c.CreateInstance(t.Context(), &InstanceCreate{Region: "ord", Plan: "vc2-1c-1gb", ImageID: "docker",
		EnableVPC: true, SSHKeyIDs: []string{"k1"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"region":"ord","plan":"vc2-1c-1gb","image_id":"docker","enable_vpc":true,"sshkey_id":["k1"]}`,
		string((*got)[0].Body))
}

func TestUpdateInstanceRequestShape(t *testing.T) {
	c, mt := mockClient(t)
	got := record(t, mt, "PATCH", "/v2/instances/i-1", 202, `{"instance":{"id":"i-1","label":"new"}}`)
	inst, err := c.UpdateInstance(t.Context(), "i-1", &InstanceUpdate{Label: "new", Tags: []string{},
		DetachVPC: []string{"v1"}})
	require.NoError(t, err)
	assert.Equal(t, "new", inst.Label)
	assert.JSONEq(t, `{"label":"new","tags":[],"detach_vpc":["v1"]}`, string((*got)[0].Body))

	_, err = c.UpdateInstance(t.Context(), "i-1", &InstanceUpdate{UserData: []byte("x")})
	require.NoError(t, err)
	assert.JSONEq(t, `{"user_data":"eA=="}`, string((*got)[1].Body), "nil tags are not sent")
}

func TestGetAndDeleteInstancePaths(t *testing.T) {
	c, mt := mockClient(t)
	get := record(t, mt, "GET", "/v2/instances/b3e1", 200, fixtureActiveInstance)
	del := record(t, mt, "DELETE", "/v2/instances/b3e1", 204, ``)
	_, err := c.GetInstance(t.Context(), "b3e1")
	require.NoError(t, err)
	require.NoError(t, c.DeleteInstance(t.Context(), "b3e1"))
	assert.Empty(t, (*get)[0].Body)
	assert.Empty(t, (*del)[0].Body)
	assert.Equal(t, "Bearer "+testKey, (*del)[0].Auth)
}

func TestIDsArePathEscaped(t *testing.T) {
	c, mt := mockClient(t)
	got := record(t, mt, "GET", "/v2/instances/a%2Fb", 200, `{"instance":{"id":"a/b"}}`)
	_, err := c.GetInstance(t.Context(), "a/b")
	require.NoError(t, err)
	assert.Len(t, *got, 1)
}

func TestListInstancesFiltersAndPaging(t *testing.T) {
	c, mt := mockClient(t, WithPerPage(2))
	got := record(t, mt, "GET", "/v2/instances", 200, `{"instances":[{"id":"a"}],"meta":{"total":1,"links":{"next":"","prev":""}}}`)
	for _, tc := range []struct {
		opts InstanceListOptions
		want url.Values
	}{
		{InstanceListOptions{Label: "fleet-7f3a-0"}, url.Values{"label": {"fleet-7f3a-0"}}},
		{InstanceListOptions{Tag: "gpufleet"}, url.Values{"tag": {"gpufleet"}}},
		{InstanceListOptions{Region: "ewr"}, url.Values{"region": {"ewr"}}},
		{InstanceListOptions{MainIP: "149.28.40.17"}, url.Values{"main_ip": {"149.28.40.17"}}},
	} {
		_, err := Collect(c.ListInstances(t.Context(), &tc.opts))
		require.NoError(t, err)
		tc.want.Set("per_page", "2")
		assert.Equal(t, tc.want, query(t, (*got)[len(*got)-1].Query))
	}
}

// The API refuses two filters with a 400: the client says so before
// sending anything, for instances and bare metal alike.
func TestListRefusesTwoFilters(t *testing.T) {
	c, mt := mockClient(t)
	sent := 0
	mt.RegisterNoResponder(func(*http.Request) (*http.Response, error) { sent++; return nil, errors.New("unexpected") })
	_, err := Collect(c.ListInstances(t.Context(), &InstanceListOptions{Tag: "gpufleet", Region: "ewr"}))
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest)
	assert.EqualError(t, err, "vultr: invalid request: a Vultr list takes one filter per request, got tag and region")
	_, err = Collect(c.ListBareMetals(t.Context(), &BareMetalListOptions{Label: "x", MainIP: "1.2.3.4"}))
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest)
	assert.Zero(t, sent)
}

func TestBareMetalRequestShapes(t *testing.T) {
	c, mt := mockClient(t)
	create := record(t, mt, "POST", "/v2/bare-metals", 202, fixtureCreateBareMetal)
	patch := record(t, mt, "PATCH", "/v2/bare-metals/cb67", 202, fixtureCreateBareMetal)
	get := record(t, mt, "GET", "/v2/bare-metals/cb67", 200, fixtureCreateBareMetal)
	del := record(t, mt, "DELETE", "/v2/bare-metals/cb67", 204, ``)
	lst := record(t, mt, "GET", "/v2/bare-metals", 200, `{"bare_metals":[],"meta":{"total":0,"links":{"next":"","prev":""}}}`)
	ctx := t.Context()
	bm, err := c.CreateBareMetal(ctx, &BareMetalCreate{Region: "ord", Plan: "vbm-256c-2048gb-8-mi300x-gpu",
		Label: "fleet-9c1b-0", ImageID: "docker", UserData: []byte("#cloud-config\n"),
		AttachVPC: []string{"1f0c2d3e-4a5b-6c7d-8e9f-a0b1c2d3e4f5"}, Tags: []string{"t"}})
	require.NoError(t, err)
	assert.Equal(t, "cb676a46-66fd-4dfb-b839-443f2e6c0b60", bm.ID)
	assert.JSONEq(t, `{"region":"ord","plan":"vbm-256c-2048gb-8-mi300x-gpu","label":"fleet-9c1b-0",
		"image_id":"docker","user_data":"I2Nsb3VkLWNvbmZpZwo=","tags":["t"],
		"attach_vpc":["1f0c2d3e-4a5b-6c7d-8e9f-a0b1c2d3e4f5"]}`, string((*create)[0].Body))

	_, err = c.UpdateBareMetal(ctx, "cb67", &BareMetalUpdate{Label: "x", Tags: []string{"a"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"label":"x","tags":["a"]}`, string((*patch)[0].Body))
	_, err = c.GetBareMetal(ctx, "cb67")
	require.NoError(t, err)
	require.NoError(t, c.DeleteBareMetal(ctx, "cb67"))
	_, err = Collect(c.ListBareMetals(ctx, &BareMetalListOptions{Label: "fleet-9c1b-0"}))
	require.NoError(t, err)
	assert.Equal(t, url.Values{"label": {"fleet-9c1b-0"}, "per_page": {"500"}}, query(t, (*lst)[0].Query))
	assert.Len(t, *get, 1)
	assert.Len(t, *del, 1)
}

func TestServerVPCRequestShapes(t *testing.T) {
	c, mt := mockClient(t)
	ia := record(t, mt, "POST", "/v2/instances/i1/vpcs/attach", 204, ``)
	id := record(t, mt, "POST", "/v2/instances/i1/vpcs/detach", 204, ``)
	il := record(t, mt, "GET", "/v2/instances/i1/vpcs", 200, fixtureInstanceVPCs)
	ba := record(t, mt, "POST", "/v2/bare-metals/b1/vpcs/attach", 204, ``)
	bd := record(t, mt, "POST", "/v2/bare-metals/b1/vpcs/detach", 204, ``)
	bl := record(t, mt, "GET", "/v2/bare-metals/b1/vpcs", 200, `{"vpcs":[{"id":"v","mac_address":"5a:01:00:00:00:01","ip_address":"10.0.0.3"}]}`)
	ctx := t.Context()
	const vpc = "6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90"
	require.NoError(t, c.AttachInstanceVPC(ctx, "i1", vpc))
	require.NoError(t, c.DetachInstanceVPC(ctx, "i1", vpc))
	require.NoError(t, c.AttachBareMetalVPC(ctx, "b1", vpc))
	require.NoError(t, c.DetachBareMetalVPC(ctx, "b1", vpc))
	for _, g := range []*[]seen{ia, id, ba, bd} {
		require.Len(t, *g, 1)
		assert.JSONEq(t, `{"vpc_id":"`+vpc+`"}`, string((*g)[0].Body))
	}
	att, err := Collect(c.ListInstanceVPCs(ctx, "i1"))
	require.NoError(t, err)
	assert.Equal(t, []VPCAttachment{{ID: vpc, MACAddress: "5a:01:04:8c:2e:11", IPAddress: "10.6.96.3"}}, att)
	batt, err := Collect(c.ListBareMetalVPCs(ctx, "b1"))
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.3", batt[0].IPAddress)
	assert.Equal(t, "500", query(t, (*il)[0].Query).Get("per_page"))
	assert.Len(t, *bl, 1, "no meta: one request")
}

func TestVPCRequestShapes(t *testing.T) {
	c, mt := mockClient(t)
	create := record(t, mt, "POST", "/v2/vpcs", 201, fixtureVPC)
	put := record(t, mt, "PUT", "/v2/vpcs/v1", 204, ``)
	del := record(t, mt, "DELETE", "/v2/vpcs/v1", 204, ``)
	ctx := t.Context()
	v, err := c.CreateVPC(ctx, &VPCCreate{Region: "ewr", Description: "dstack-vpc-ewr"})
	require.NoError(t, err)
	assert.Equal(t, 20, v.V4SubnetMask)
	_, err = c.CreateVPC(ctx, &VPCCreate{Region: "ewr", V4Subnet: "10.99.0.0", V4SubnetMask: 24})
	require.NoError(t, err)
	assert.JSONEq(t, `{"region":"ewr","description":"dstack-vpc-ewr"}`, string((*create)[0].Body), "auto subnet: not sent")
	assert.JSONEq(t, `{"region":"ewr","v4_subnet":"10.99.0.0","v4_subnet_mask":24}`, string((*create)[1].Body))
	require.NoError(t, c.UpdateVPC(ctx, "v1", "renamed"))
	assert.JSONEq(t, `{"description":"renamed"}`, string((*put)[0].Body))
	require.NoError(t, c.DeleteVPC(ctx, "v1"))
	assert.Len(t, *del, 1)
}

func TestSSHKeyRequestShapes(t *testing.T) {
	c, mt := mockClient(t)
	create := record(t, mt, "POST", "/v2/ssh-keys", 201, fixtureSSHKey)
	patch := record(t, mt, "PATCH", "/v2/ssh-keys/k1", 204, ``)
	del := record(t, mt, "DELETE", "/v2/ssh-keys/k1", 204, ``)
	lst := record(t, mt, "GET", "/v2/ssh-keys", 200, `{"ssh_keys":[`+fixtureSSHKeyObj+`],"meta":{"total":1,"links":{"next":"","prev":""}}}`)
	ctx := t.Context()
	k, err := c.CreateSSHKey(ctx, "fleet-key", "ssh-ed25519 AAAAC3Nza xyz user@host")
	require.NoError(t, err)
	assert.Equal(t, "3b8a2f61-8c1e-4c2a-9d0b-6e7f1a2b3c4d", k.ID)
	assert.JSONEq(t, `{"name":"fleet-key","ssh_key":"ssh-ed25519 AAAAC3Nza xyz user@host"}`, string((*create)[0].Body))
	require.NoError(t, c.UpdateSSHKey(ctx, "k1", "renamed", ""))
	assert.JSONEq(t, `{"name":"renamed"}`, string((*patch)[0].Body))
	require.NoError(t, c.DeleteSSHKey(ctx, "k1"))
	keys, err := Collect(c.ListSSHKeys(ctx))
	require.NoError(t, err)
	assert.Equal(t, "fleet-key", keys[0].Name)
	assert.Len(t, *del, 1)
	assert.Len(t, *lst, 1)
}

func TestPlansAndRegionsRequestShapes(t *testing.T) {
	c, mt := mockClient(t)
	plans := record(t, mt, "GET", "/v2/plans", 200, fixturePlans2)
	avail := record(t, mt, "GET", "/v2/regions/ewr/availability", 200,
		`{"available_plans":["vbm-24c-256gb-amd","vbm-48c-1024gb-4-a100-gpu"]}`)
	regions := record(t, mt, "GET", "/v2/regions", 200, `{"regions":[{"id":"ewr","city":"New Jersey","country":"US",
		"continent":"North America","options":["ddos_protection"],"connectivity":["public_ip","nat_gateway"]}],
		"meta":{"total":1,"links":{"next":"","prev":""}}}`)
	ctx := t.Context()
	// The first page's next cursor points at a page answered by the same
	// responder, whose meta repeats it: the repeated-cursor guard ends it.
	var ids []string
	for p, err := range c.ListPlans(ctx, &PlanListOptions{Type: "vcg"}) {
		if err != nil {
			assert.ErrorIs(t, err, ErrRepeatedCursor)
			break
		}
		ids = append(ids, p.ID)
	}
	assert.Equal(t, []string{"vcg-a100-3c-30g-20vram", "vcg-l40s-16c-180g-48vram",
		"vcg-a100-3c-30g-20vram", "vcg-l40s-16c-180g-48vram"}, ids)
	require.Len(t, *plans, 2)
	assert.Equal(t, url.Values{"type": {"vcg"}, "per_page": {"500"}}, query(t, (*plans)[0].Query))
	assert.Equal(t, url.Values{"type": {"vcg"}, "per_page": {"500"},
		"cursor": {"bmV4dF9fdmNnLWwxMHMtMTZjLTE4MGctNDh2cmFt"}}, query(t, (*plans)[1].Query))

	av, err := c.RegionAvailability(ctx, "ewr", "vbm")
	require.NoError(t, err)
	assert.Equal(t, []string{"vbm-24c-256gb-amd", "vbm-48c-1024gb-4-a100-gpu"}, av)
	assert.Equal(t, "type=vbm", (*avail)[0].Query)
	rs, err := Collect(c.ListRegions(ctx))
	require.NoError(t, err)
	assert.Equal(t, []string{"public_ip", "nat_gateway"}, rs[0].Connectivity)
	assert.Len(t, *regions, 1)
}
