package sim_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// haKeyPair returns a deterministic ed25519 key (seed byte i) and its
// authorized_keys line.
func haKeyPair(t *testing.T, i byte, comment string) (ssh.Signer, string) {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = i
	signer, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(seed))
	require.NoError(t, err)
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " " + comment
	return signer, line
}

type haKeyJSON struct {
	Type        string `json:"type"`
	PublicKey   string `json:"public_key"`
	Fingerprint string `json:"fingerprint"`
	Comment     string `json:"comment"`
}

func TestHotAisleSSHKeys(t *testing.T) {
	x := haNew(t)
	// A key whose fingerprint holds a "/", to be sent as %2F.
	var signer ssh.Signer
	var line string
	for i := byte(1); ; i++ {
		signer, line = haKeyPair(t, i, "ci@build")
		if strings.Contains(ssh.FingerprintSHA256(signer.PublicKey()), "/") {
			break
		}
	}
	var k haKeyJSON
	x.ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 200, &k)
	assert.Equal(t, "ssh-ed25519", k.Type)
	assert.Equal(t, base64.StdEncoding.EncodeToString(signer.PublicKey().Marshal()), k.PublicKey)
	assert.Equal(t, ssh.FingerprintSHA256(signer.PublicKey()), k.Fingerprint)
	assert.True(t, strings.HasPrefix(k.Fingerprint, "SHA256:"))
	assert.Equal(t, "ci@build", k.Comment)

	x.fail("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 409, "Conflict - key already registered")
	_, other := haKeyPair(t, 200, "other")
	x.ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": other}, 200, nil)
	var keys []haKeyJSON
	x.ok("GET", "/api/user/ssh_keys/", nil, 200, &keys)
	require.Len(t, keys, 2)
	assert.Equal(t, k, keys[0])

	x.fail("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": "ssh-ed25519 AAAA-not-base64 x"}, 422,
		"Unprocessable Entity: invalid SSH key format")
	x.fail("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line + "\n" + other}, 422,
		"Unprocessable Entity: invalid SSH key format")
	x.fail("POST", "/api/user/ssh_keys/", map[string]string{}, 400, "Bad Request: Invalid input")
	x.fail("POST", "/api/user/ssh_keys/", map[string]any{"authorized_key": 7}, 422, "Unprocessable Entity: Invalid data format")

	fp := strings.TrimPrefix(k.Fingerprint, "SHA256:")
	x.fail("DELETE", "/api/user/ssh_keys/"+url.PathEscape(k.Fingerprint)+"/", nil, 404, "SSH key not found") // with the prefix
	x.fail("DELETE", "/api/user/ssh_keys/"+fp+"/", nil, 404, "Not Found: Resource not found")                // "/" unescaped: another path
	x.ok("DELETE", "/api/user/ssh_keys/"+url.PathEscape(fp)+"/", nil, 204, nil)
	x.fail("DELETE", "/api/user/ssh_keys/"+url.PathEscape(fp)+"/", nil, 404, "SSH key not found")
	x.ok("GET", "/api/user/ssh_keys/", nil, 200, &keys)
	require.Len(t, keys, 1)
	// Deleted, the key can be registered again.
	x.ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 200, nil)
	r := haResource(t, x.h, k.Fingerprint)
	assert.Equal(t, "ssh_key", r.Kind)
}

// A fingerprint with "//" in it arrives as "%2F%2F" inside one segment: the
// path is clean once escaped, so the key is found, not refused as unclean.
func TestHotAisleSSHKeyFingerprintWithDoubleSlash(t *testing.T) {
	x := haNew(t)
	var signer ssh.Signer
	var line string
	for i := 0; ; i++ {
		require.Less(t, i, 100000, "no fingerprint with // found")
		seed := make([]byte, ed25519.SeedSize)
		seed[0], seed[1], seed[2] = byte(i), byte(i>>8), byte(i>>16)
		var err error
		signer, err = ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(seed))
		require.NoError(t, err)
		if strings.Contains(ssh.FingerprintSHA256(signer.PublicKey()), "//") {
			line = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
			break
		}
	}
	x.ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 200, nil)
	fp := strings.TrimPrefix(ssh.FingerprintSHA256(signer.PublicKey()), "SHA256:")
	x.ok("DELETE", "/api/user/ssh_keys/"+url.PathEscape(fp)+"/", nil, 204, nil)
}
