package vultrfake

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/sshhost"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// vultrTestKey returns a deterministic ed25519 authorized_keys line.
func vultrTestKey(t *testing.T, n byte) string {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{n}, ed25519.SeedSize))
	pub, err := ssh.NewPublicKey(priv.Public())
	require.NoError(t, err)
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " user@host"
}

func TestVultrCloudConfigKeys(t *testing.T) {
	a, b, c, d := vultrTestKey(t, 1), vultrTestKey(t, 2), vultrTestKey(t, 3), vultrTestKey(t, 4)
	cfg := "#cloud-config\n" +
		"ssh_authorized_keys:\n" +
		"  - " + a + "\n" +
		"\n" +
		"  - \"" + b + "\"\n" +
		"runcmd:\n" +
		"  - echo " + d + "\n" +
		"users:\n" +
		"  - name: root\n" +
		"    ssh_authorized_keys:\n" +
		"    - '" + c + "'\n" +
		"  - name: other\n" +
		"    shell: /bin/bash\n"
	keys := vultrCloudConfigKeys(cfg)
	require.Len(t, keys, 3)
	want := []string{a, b, c}
	for i, k := range keys {
		assert.Equal(t, strings.Fields(want[i])[1], base64.StdEncoding.EncodeToString(k.Marshal()))
	}
	assert.Len(t, vultrCloudConfigKeys("#cloud-config\nssh_authorized_keys: ["+a+", \""+b+"\"]\n"), 2)
	assert.Empty(t, vultrCloudConfigKeys("#!/bin/bash\n# ssh_authorized_keys:\n#  - "+a+"\n"), "not a cloud-config")
	assert.Empty(t, vultrCloudConfigKeys("#cloud-config\nssh_authorized_keys:\n  - not-a-key\n"))
	assert.Len(t, vultrCloudConfigKeys("#cloud-config\r\nssh_authorized_keys:\r\n- "+a+"\r\n"), 1)
}

func TestVultrSSHHostLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		ud := base64.StdEncoding.EncodeToString([]byte("#cloud-config\nssh_authorized_keys:\n  - " + vultrTestKey(t, 9) + "\n"))
		id := h.create("vc2-1c-1gb", "ewr", map[string]any{"user_data": ud})["id"].(string)
		srv := h.v.st.servers[id]
		addr := srv.mainIP + ":22"
		require.NotNil(t, h.v.Network().Host(addr), "the host exists from create, refusing TCP")
		assert.Len(t, srv.keys, 1)

		time.Sleep(10 * time.Minute)
		assert.Equal(t, srv.mainIP, h.get(id, false)["main_ip"], "the host sits at main_ip")
		h.obj("POST", "/v2/instances/"+id+"/halt", nil, 204)
		assert.Nil(t, h.v.Network().Host(addr), "a halted server has no sshd")
		h.obj("POST", "/v2/instances/"+id+"/start", nil, 204)
		assert.NotNil(t, h.v.Network().Host(addr))
		h.obj("DELETE", "/v2/instances/"+id, nil, 204)
		assert.Nil(t, h.v.Network().Host(addr), "DELETE takes the host away")

		// A shared network: two fakes, one Dial.
		n := sshhost.NewNetwork(nil, 1)
		v2 := NewVultr(WithNetwork(n))
		assert.Same(t, n, v2.Network())
		sid, err := v2.SeedServer(VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr"})
		require.NoError(t, err)
		addr2 := v2.st.servers[sid].mainIP + ":22"
		assert.NotNil(t, n.Host(addr2))
		v2.Reset()
		assert.Nil(t, n.Host(addr2))
	})
}

func TestVultrSSHScheduleFollowsTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t, WithVultrTiming("vbm-*", VultrTiming{Pending: time.Hour, SSHDelay: 5 * time.Minute}))
		id := h.create("vbm-24c-256gb-amd", "ewr", map[string]any{"image_id": "docker", "os_id": nil})["id"].(string)
		require.NoError(t, h.v.SetServerTiming(id, VultrTiming{Pending: 2 * time.Hour, SSHDelay: time.Minute}))
		got := h.v.Network().Host(h.v.st.servers[id].hostAddr)
		require.NotNil(t, got)
		assert.Equal(t, id, got.InstanceID())
		assert.Equal(t, "root", got.User())
		assert.True(t, got.Schedule().RefuseUntil.Equal(time.Now().Add(2*time.Hour+time.Minute)))
		assert.Error(t, h.v.SetServerTiming("nope", VultrTiming{}))
	})
}

// TestVultrSSHDial reaches a new server's sshd through (*Vultr).Dial with
// the key from the create's cloud-config, as root, once the server is active
// and sshd is up.
func TestVultrSSHDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
		signer, err := ssh.NewSignerFromKey(priv)
		require.NoError(t, err)
		line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
		ud := base64.StdEncoding.EncodeToString([]byte("#cloud-config\nssh_authorized_keys:\n  - " + line + "\n"))
		id := h.create("vc2-1c-1gb", "ewr", map[string]any{"user_data": ud})["id"].(string)
		addr := h.v.st.servers[id].mainIP + ":22"
		ctx := context.Background()

		time.Sleep(90*time.Second + 59*time.Second)
		_, err = h.v.Dial(ctx, "tcp", addr)
		require.Error(t, err, "sshd is not up before active + SSHDelay")

		time.Sleep(time.Second)
		dial := func(user string) error {
			conn, err := h.v.Dial(ctx, "tcp", addr)
			if err != nil {
				return err
			}
			cc, chans, reqs, err := ssh.NewClientConn(conn, addr, &ssh.ClientConfig{User: user,
				Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.InsecureIgnoreHostKey()})
			if err != nil {
				conn.Close()
				return err
			}
			return ssh.NewClient(cc, chans, reqs).Close()
		}
		require.NoError(t, dial("root"))
		assert.Error(t, dial("ubuntu"), "the keys are installed for root")
	})
}
