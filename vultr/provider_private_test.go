package vultr

import (
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	vmID    = "b3e1c0a2-5d4f-4e21-8c77-2f0a9d6e4b11"
	metalID = "cb676a46-66fd-4dfb-b839-443f2e6c0b60"
	vpcID   = "6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90"
)

// blankInternal is the active instance fixture with internal_ip "", as
// Vultr answers with two private networks attached.
var blankInternal = strings.Replace(fixtureActiveInstance, `"internal_ip":"10.6.96.3"`, `"internal_ip":""`, 1)

// activeMetalNoInternal is the active bare-metal fixture without the
// undocumented internal_ip key.
var activeMetalNoInternal = strings.Replace(fixtureActiveBareMetal, `"internal_ip":"10.9.0.4",`, ``, 1)

func vpcOffer(metal bool) fleet.Offer {
	if metal {
		return fleet.Offer{Provider: fleet.ProviderVultr, Region: "ord", InstanceType: "vbm-256c-2048gb-8-mi300x-gpu", BareMetal: true}
	}
	return fleet.Offer{Provider: fleet.ProviderVultr, Region: "ewr", InstanceType: "vcg-a100-3c-30g-20vram"}
}

// A cluster member whose GET has internal_ip "" gets its address from GET
// …/vpcs: one extra call, once; the next Get reuses it.
func TestProviderPrivateIPFromAttachmentWhenInternalIPBlank(t *testing.T) {
	s, c := newShaped(t, map[string]reply{
		"POST /v2/instances":                  {202, fixtureCreateInstance, nil},
		"GET /v2/instances/" + vmID:           {200, blankInternal, nil},
		"GET /v2/instances/" + vmID + "/vpcs": {200, fixtureInstanceVPCs, nil},
	})
	p := NewProvider(c)
	ctx := t.Context()
	_, err := p.Create(ctx, fleet.CreateRequest{Offer: vpcOffer(false), VPCID: vpcID,
		Label: fleet.Label{Fleet: "c", RequestID: "0123456789ab"}})
	require.NoError(t, err)
	for range 2 {
		inst, err := p.Get(ctx, vmID)
		require.NoError(t, err)
		assert.Equal(t, "10.6.96.3", inst.PrivateIP)
		assert.Equal(t, vpcID, inst.VPCID)
	}
	assert.Equal(t, 1, s.count("GET /v2/instances/"+vmID+"/vpcs"), "one extra call in all")
}

// Bare metal without the internal_ip key: the same, through
// /v2/bare-metals/{id}/vpcs (which answers without meta).
func TestProviderPrivateIPOfBareMetalFromAttachment(t *testing.T) {
	s, c := newShaped(t, map[string]reply{
		"POST /v2/bare-metals":                     {202, fixtureCreateBareMetal, nil},
		"GET /v2/bare-metals/" + metalID:           {200, activeMetalNoInternal, nil},
		"GET /v2/bare-metals/" + metalID + "/vpcs": {200, `{"vpcs":[{"id":"` + vpcID + `","mac_address":"5a:01:04:8c:2e:12","ip_address":"10.6.96.4"}]}`, nil},
	})
	p := NewProvider(c)
	ctx := t.Context()
	_, err := p.Create(ctx, fleet.CreateRequest{Offer: vpcOffer(true), VPCID: vpcID,
		Label: fleet.Label{Fleet: "c", RequestID: "0123456789ab"}})
	require.NoError(t, err)
	inst, err := p.Get(ctx, metalID)
	require.NoError(t, err)
	assert.Equal(t, "10.6.96.4", inst.PrivateIP)
	assert.Equal(t, 1, s.count("GET /v2/bare-metals/"+metalID+"/vpcs"))
}

// No extra call for a server that is not a VPC member, for one whose
// internal_ip is set, or for one not running yet.
func TestProviderPrivateIPNoExtraCalls(t *testing.T) {
	pendingMember := "11111111-2222-4333-8444-555555555555"
	pending := strings.NewReplacer(vmID, pendingMember, `"status":"active"`, `"status":"pending"`,
		`"main_ip":"149.28.40.17"`, `"main_ip":"0.0.0.0"`, `"internal_ip":"10.6.96.3"`, `"internal_ip":""`).Replace(fixtureActiveInstanceObj)
	lone := strings.NewReplacer(vmID, "99999999-2222-4333-8444-555555555555", `"internal_ip":"10.6.96.3"`, `"internal_ip":""`).Replace(fixtureActiveInstanceObj)
	list := `{"instances":[` + fixtureActiveInstanceObj + `,` + pending + `,` + lone + `],"meta":{"total":3,"links":{"next":"","prev":""}}}`
	s, c := newShaped(t, map[string]reply{
		"GET /v2/instances":   {200, list, nil},
		"GET /v2/bare-metals": {200, `{"bare_metals":[],"meta":{"total":0,"links":{"next":"","prev":""}}}`, nil},
		"GET /v2/plans":       {200, `{"plans":[],"meta":{"total":0,"links":{"next":"","prev":""}}}`, nil},
	})
	p := NewProvider(c)
	p.markMember(vmID, "")          // member with internal_ip set
	p.markMember(pendingMember, "") // member, not running yet
	insts, err := p.List(t.Context())
	require.NoError(t, err)
	require.Len(t, insts, 3)
	assert.Equal(t, "10.6.96.3", insts[0].PrivateIP)
	assert.Empty(t, insts[1].PrivateIP)
	assert.Empty(t, insts[2].PrivateIP, "not a member: blank stays blank")
	for route, n := range s.calls {
		assert.False(t, strings.HasSuffix(route, "/vpcs"), "%s called %d times", route, n)
	}
}

// InstanceVPCs (the Manager's attach confirmation) makes an adopted server a
// member and records its address: List needs no extra call then.
func TestProviderInstanceVPCsTeachesTheAddress(t *testing.T) {
	list := `{"instances":[` + strings.Replace(fixtureActiveInstanceObj, `"internal_ip":"10.6.96.3"`, `"internal_ip":""`, 1) +
		`],"meta":{"total":1,"links":{"next":"","prev":""}}}`
	s, c := newShaped(t, map[string]reply{
		"GET /v2/instances":                   {200, list, nil},
		"GET /v2/bare-metals":                 {200, `{"bare_metals":[]}`, nil},
		"GET /v2/plans":                       {200, `{"plans":[]}`, nil},
		"GET /v2/instances/" + vmID + "/vpcs": {200, fixtureInstanceVPCs, nil},
	})
	p := NewProvider(c)
	ids, err := p.InstanceVPCs(t.Context(), vmID)
	require.NoError(t, err)
	assert.Equal(t, []string{vpcID}, ids)
	insts, err := p.List(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "10.6.96.3", insts[0].PrivateIP)
	assert.Equal(t, 1, s.count("GET /v2/instances/"+vmID+"/vpcs"))
}

// The provider lists with no filter at all (the API takes one per request):
// only per_page (and cursor) are sent.
func TestProviderListsWithoutFilters(t *testing.T) {
	c, mt := mockClient(t)
	insts := record(t, mt, "GET", "/v2/instances", 200, `{"instances":[]}`)
	metal := record(t, mt, "GET", "/v2/bare-metals", 200, `{"bare_metals":[]}`)
	_, err := NewProvider(c).List(t.Context())
	require.NoError(t, err)
	require.Len(t, *insts, 1)
	require.Len(t, *metal, 1)
	assert.Equal(t, "per_page=500", (*insts)[0].Query)
	assert.Equal(t, "per_page=500", (*metal)[0].Query)
}
