package hotaisle

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// testAuthorizedKey returns a deterministic ed25519 authorized_keys line.
func testAuthorizedKey(t testing.TB) string {
	t.Helper()
	pub := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public()
	pk, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	return string(ssh.MarshalAuthorizedKey(pk))[:len(ssh.MarshalAuthorizedKey(pk))-1] + " ci@build"
}

func TestRequestHeadersAndTrailingSlash(t *testing.T) {
	c, m := newMock(t, WithUserAgent("ua-test/1"))
	m.on("GET", "/teams/acme/virtual_machines/", 200, `[]`)
	_, err := c.ListVMs(context.Background())
	require.NoError(t, err)
	r := m.last(t)
	assert.Equal(t, "GET", r.Method)
	assert.Equal(t, "/api/teams/acme/virtual_machines/", r.RawPath)
	assert.Equal(t, "Token "+testKey, r.Header.Get("Authorization"))
	assert.Equal(t, "application/json", r.Header.Get("Accept"))
	assert.Equal(t, "ua-test/1", r.Header.Get("User-Agent"))
	assert.Empty(t, r.Header.Get("Content-Type"), "no body, no content type")
}

func TestReadCallsHitExactPaths(t *testing.T) {
	c, m := newMock(t)
	ctx := context.Background()
	calls := []struct {
		path, body string
		call       func() error
	}{
		{"/user/", e10User, func() error { _, err := c.GetUser(ctx); return err }},
		{"/teams/", `[]`, func() error { _, err := c.ListTeams(ctx); return err }},
		{"/teams/acme/", `{"handle":"acme","name":"Acme"}`, func() error { _, err := c.GetTeam(ctx); return err }},
		{"/teams/acme/virtual_machines/available/", e1VMTypes, func() error { _, err := c.ListVMTypes(ctx); return err }},
		{"/teams/acme/bare_metal/available/", e2BareMetalTypes, func() error { _, err := c.ListBareMetalTypes(ctx); return err }},
		{"/teams/acme/virtual_machines/enc1-gpuvm022/", e4VM, func() error { _, err := c.GetVM(ctx, "enc1-gpuvm022"); return err }},
		{"/teams/acme/virtual_machines/enc1-gpuvm022/state/", e5State, func() error { _, err := c.GetVMState(ctx, "enc1-gpuvm022"); return err }},
		{"/teams/acme/bare_metal/", `[` + e7Server + `]`, func() error { _, err := c.ListBareMetal(ctx); return err }},
		{"/teams/acme/bare_metal/enc1-gpu012/", e7Server, func() error { _, err := c.GetBareMetal(ctx, "enc1-gpu012"); return err }},
		{"/teams/acme/bare_metal/enc1-gpu012/power/", e8Power, func() error { _, err := c.GetBareMetalPower(ctx, "enc1-gpu012"); return err }},
		{"/user/ssh_keys/", `[` + e9Key + `]`, func() error { _, err := c.ListSSHKeys(ctx); return err }},
	}
	for _, tc := range calls {
		m.on("GET", tc.path, 200, tc.body)
		require.NoError(t, tc.call(), tc.path)
		assert.Equal(t, "/api"+tc.path, m.last(t).RawPath)
	}
	assert.Equal(t, len(calls), m.count())
}

func TestProvisionFullSpecPostsOfferSpecsVerbatim(t *testing.T) {
	c, m := newMock(t)
	m.on("GET", "/teams/acme/virtual_machines/available/", 200, e1VMTypes)
	m.on("POST", "/teams/acme/virtual_machines/", 200, e4VM)
	types, err := c.ListVMTypes(context.Background())
	require.NoError(t, err)
	vm, err := c.ProvisionVM(context.Background(), VMProvisionRequest{VMSpecs: types[0].Specs})
	require.NoError(t, err)
	assert.Equal(t, "enc1-gpuvm022", vm.Name)
	r := m.last(t)
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	assert.JSONEq(t, `{"cpu_cores": 13, "ram_capacity": 240518168576, "disk_capacity": 13194139533312,
		"cpus": {"count": 1, "manufacturer": "Intel", "model": "Xeon Platinum 8470", "cores": 13, "frequency": 2000000000},
		"gpus": [{"count": 1, "manufacturer": "AMD", "model": "MI300X"}]}`, r.Body)
}

func TestProvisionPartialSpecWithUserData(t *testing.T) {
	c, m := newMock(t)
	m.on("POST", "/teams/acme/virtual_machines/", 200, e4VM)
	_, err := c.ProvisionVM(context.Background(), VMProvisionRequest{
		VMSpecs:     VMSpecs{GPUs: []GPU{{Count: 1, Manufacturer: "AMD", Model: "MI300X"}}},
		UserDataURL: "https://raw.githubusercontent.com/hotaisle/cloud-init-templates/master/vllm-docker.yaml",
	})
	require.NoError(t, err)
	assert.JSONEq(t, e3bMinimalProvision, m.last(t).Body)
}

func TestProvisionRefusesEmptySpecWithoutCalling(t *testing.T) {
	c, m := newMock(t)
	_, err := c.ProvisionVM(context.Background(), VMProvisionRequest{UserDataURL: "https://x.test/u"})
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest)
	assert.Zero(t, m.count())
}

func TestReserveWrapsSpecs(t *testing.T) {
	c, m := newMock(t)
	m.on("POST", "/teams/acme/bare_metal/", 201, e7Server)
	bm, err := c.ReserveBareMetal(context.Background(), BareMetalReservation{Description: "training node",
		Specs: BareMetalSpecs{CPUCores: 64, RAMCapacity: 2199023255552, DiskCapacity: 123840207962112}})
	require.NoError(t, err)
	assert.Equal(t, "enc1-gpu012", bm.Name)
	assert.JSONEq(t, e7Reserve, m.last(t).Body)
}

func TestUpdatesArePatchWithDescription(t *testing.T) {
	c, m := newMock(t)
	m.on("PATCH", "/teams/acme/virtual_machines/enc1-gpuvm022/", 204, "")
	m.on("PATCH", "/teams/acme/bare_metal/enc1-gpu012/", 204, "")
	require.NoError(t, c.UpdateVM(context.Background(), "enc1-gpuvm022", VMUpdate{Description: "ci-runner-1"}))
	assert.JSONEq(t, `{"description":"ci-runner-1"}`, m.last(t).Body)
	require.NoError(t, c.UpdateBareMetal(context.Background(), "enc1-gpu012", BareMetalUpdate{}))
	assert.JSONEq(t, `{"description":""}`, m.last(t).Body, "an empty description is sent, to clear it")
}

func TestDeletesWithAndWithoutForce(t *testing.T) {
	c, m := newMock(t)
	ctx := context.Background()
	m.on("DELETE", "/teams/acme/virtual_machines/enc1-gpuvm022/?force=true", 204, "")
	m.on("DELETE", "/teams/acme/virtual_machines/enc1-gpuvm022/", 204, "")
	m.on("DELETE", "/teams/acme/bare_metal/enc1-gpu012/?force=true", 204, "")
	m.on("DELETE", "/teams/acme/bare_metal/enc1-gpu012/", 204, "")
	for _, tc := range []struct {
		call  func() error
		path  string
		query string
	}{
		{func() error { return c.DeleteVM(ctx, "enc1-gpuvm022", false) }, "/api/teams/acme/virtual_machines/enc1-gpuvm022/", ""},
		{func() error { return c.DeleteVM(ctx, "enc1-gpuvm022", true) }, "/api/teams/acme/virtual_machines/enc1-gpuvm022/", "force=true"},
		{func() error { return c.ReleaseBareMetal(ctx, "enc1-gpu012", false) }, "/api/teams/acme/bare_metal/enc1-gpu012/", ""},
		{func() error { return c.ReleaseBareMetal(ctx, "enc1-gpu012", true) }, "/api/teams/acme/bare_metal/enc1-gpu012/", "force=true"},
	} {
		require.NoError(t, tc.call())
		r := m.last(t)
		assert.Equal(t, "DELETE", r.Method)
		assert.Equal(t, tc.path, r.RawPath)
		assert.Equal(t, tc.query, r.RawQuery)
		assert.Empty(t, r.Body)
	}
}

func TestPathParamsAreEscaped(t *testing.T) {
	c, m := newMock(t)
	m.on("GET", "/teams/acme/virtual_machines/a%2Fb%3Fc/", 200, e4VM)
	_, err := c.GetVM(context.Background(), "a/b?c")
	require.NoError(t, err)
	assert.Equal(t, "/api/teams/acme/virtual_machines/a%2Fb%3Fc/", m.last(t).RawPath)

	odd, m2 := newMock(t)
	odd.team = "a b/c"
	m2.on("GET", "/teams/a%20b%2Fc/virtual_machines/", 200, `[]`)
	_, err = odd.ListVMs(context.Background())
	require.NoError(t, err)
}

func TestRefusesNamesThatEscapeTheirSegment(t *testing.T) {
	c, m := newMock(t)
	for _, name := range []string{"", ".", ".."} {
		assert.ErrorIs(t, c.DeleteVM(context.Background(), name, true), fleet.ErrInvalidRequest)
		assert.ErrorIs(t, c.ReleaseBareMetal(context.Background(), name, true), fleet.ErrInvalidRequest)
		assert.ErrorIs(t, c.DeleteSSHKey(context.Background(), name), fleet.ErrInvalidRequest)
	}
	noTeam := New(testKey, "", WithHTTPClient(&http.Client{Transport: m}))
	_, err := noTeam.ListVMs(context.Background())
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest)
	assert.Zero(t, m.count())
}

func TestAddSSHKeyPostsAuthorizedKey(t *testing.T) {
	c, m := newMock(t)
	m.on("POST", "/user/ssh_keys/", 200, e9Key)
	line := testAuthorizedKey(t)
	key, existed, err := c.AddSSHKey(context.Background(), line+"\n")
	require.NoError(t, err)
	assert.False(t, existed)
	assert.Equal(t, e9Fingerprint, key.Fingerprint)
	assert.JSONEq(t, `{"authorized_key":"`+line+`"}`, m.last(t).Body)
}

func TestAddSSHKey409IsAlreadyThere(t *testing.T) {
	c, m := newMock(t)
	m.on("POST", "/user/ssh_keys/", 409, `"Conflict - key already registered"`)
	line := testAuthorizedKey(t)
	key, existed, err := c.AddSSHKey(context.Background(), line)
	require.NoError(t, err)
	assert.True(t, existed)
	pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	require.NoError(t, err)
	assert.Equal(t, ssh.FingerprintSHA256(pk), key.Fingerprint)
	assert.Equal(t, "ssh-ed25519", key.Type)
	assert.Equal(t, "ci@build", key.Comment)
	assert.Equal(t, 1, m.count(), "a POST is never retried")
}

func TestAddSSHKeyRefusesGarbageLocally(t *testing.T) {
	c, m := newMock(t)
	_, _, err := c.AddSSHKey(context.Background(), "-----BEGIN OPENSSH PRIVATE KEY----- secret")
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest)
	assert.NotContains(t, err.Error(), "secret")
	assert.Zero(t, m.count())
}

func TestDeleteSSHKeyEscapesFingerprint(t *testing.T) {
	c, m := newMock(t)
	m.on("DELETE", "/user/ssh_keys/Xk3f9Qw2Lm8%2FZr7Tb1+Ny4Hc6Vd0Pa5Se2Ju9Og3Ki/", 204, "")
	require.NoError(t, c.DeleteSSHKey(context.Background(), e9Fingerprint))
	require.NoError(t, c.DeleteSSHKey(context.Background(), "Xk3f9Qw2Lm8/Zr7Tb1+Ny4Hc6Vd0Pa5Se2Ju9Og3Ki"))
	assert.Equal(t, "/api/user/ssh_keys/Xk3f9Qw2Lm8%2FZr7Tb1+Ny4Hc6Vd0Pa5Se2Ju9Og3Ki/", m.last(t).RawPath)
	assert.Equal(t, 2, m.count())
}

func TestKeyIsTrimmed(t *testing.T) {
	m := &mock{MockTransport: httpmock.NewMockTransport()}
	c := New("Token "+testKey+"\n", "acme", WithBaseURL(testBase), WithHTTPClient(&http.Client{Transport: m}))
	m.on("GET", "/user/ssh_keys/", 200, `[]`)
	_, err := c.ListSSHKeys(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "Token "+testKey, m.last(t).Header.Get("Authorization"))
}

// A key that is empty once trimmed, or that holds a control character
// inside it, is refused at call time with a *KeyError (a wrong key, nothing
// sent), not sent and retried as a transport failure; the error never
// quotes the key.
func TestUnsendableKeyIsRefusedBeforeSending(t *testing.T) {
	for _, given := range []string{"", " \n", "\t \r\n", "6ddfaa4539b4c7e0\n46fe4b94.ee7003caf1bca1c01bb37b7a",
		"6ddfaa4539b4c7e046fe4b94.ee7003caf1\x00bca1c01bb37b7a", "6ddfaa4539b4c7e046fe4b94\t.ee7003caf1bca1c01bb37b7a"} {
		t.Run(fmt.Sprintf("%q", given), func(t *testing.T) {
			m := &mock{MockTransport: httpmock.NewMockTransport()}
			c := New(given, "acme", WithBaseURL(testBase), WithHTTPClient(&http.Client{Transport: m}), WithRateLimit(0, 0))
			_, err := c.ListVMs(context.Background())
			var ke *KeyError
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, "hotaisle", ke.Provider)
			assert.True(t, errors.Is(err, fleet.ErrUnauthorized))
			assert.True(t, errors.Is(err, fleet.ErrNotSent))
			assert.False(t, errors.Is(err, fleet.ErrUnavailable))
			assert.Zero(t, m.GetTotalCallCount(), "nothing sent")
			assert.NotContains(t, fmt.Sprintf("%v %+v %#v", err, err, err), "ee7003caf1")
		})
	}
}
