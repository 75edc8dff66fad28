package sim_test

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/gpufleet/gpufleet/sim"
)

// haSSH logs in as "hotaisle" over conn.
func haSSH(conn net.Conn, addr string, signer ssh.Signer) (*ssh.Client, error) {
	cfg := &ssh.ClientConfig{User: sim.HotAisleUser, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: time.Minute}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return ssh.NewClient(c, chans, reqs), nil
}

func haDialSSH(t *testing.T, h *sim.HotAisle, addr string, signer ssh.Signer) (*ssh.Client, error) {
	t.Helper()
	conn, err := h.Dial(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	return haSSH(conn, addr, signer)
}

// A VM's sshd accepts ~90 s after provisioning, as user hotaisle, with the
// user's keys as registered at login time; it goes with the VM.
func TestHotAisleVMSSHHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		defer x.h.Network().Close()
		vm := x.provision(1)
		addr := vm.IPAddress + ":22"
		host := x.h.Network().Host(addr)
		require.NotNil(t, host)
		assert.Equal(t, vm.Name, host.InstanceID())
		assert.Equal(t, "hotaisle", host.User())

		signer, line := haKeyPair(t, 21, "ops")
		_, err := haDialSSH(t, x.h, addr, signer)
		require.ErrorIs(t, err, syscall.ECONNREFUSED, "running, but sshd not up yet")
		time.Sleep(sim.DefaultHotAisleSSHDelay)
		_, err = haDialSSH(t, x.h, addr, signer)
		require.Error(t, err, "the key is not registered")
		x.ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 200, nil)
		c, err := haDialSSH(t, x.h, addr, signer)
		require.NoError(t, err, "a key registered after provisioning works")
		s, err := c.NewSession()
		require.NoError(t, err)
		out, err := s.Output("whoami")
		require.NoError(t, err)
		assert.Equal(t, "hotaisle\n", string(out))
		require.NoError(t, c.Close())

		time.Sleep(30 * time.Minute)
		x.ok("DELETE", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 204, nil)
		assert.Nil(t, x.h.Network().Host(addr))
		_, err = haDialSSH(t, x.h, addr, signer)
		require.ErrorIs(t, err, syscall.ECONNREFUSED)
	})
}

// SlowSSH lengthens the wait for sshd of VMs provisioned afterwards.
func TestHotAisleSlowSSH(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		defer x.h.Network().Close()
		signer, line := haKeyPair(t, 22, "ops")
		x.ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 200, nil)
		x.h.SlowSSH(5 * time.Minute)
		vm := x.provision(1)
		time.Sleep(4 * time.Minute)
		_, err := haDialSSH(t, x.h, vm.IPAddress+":22", signer)
		require.ErrorIs(t, err, syscall.ECONNREFUSED)
		time.Sleep(time.Minute)
		c, err := haDialSSH(t, x.h, vm.IPAddress+":22", signer)
		require.NoError(t, err)
		require.NoError(t, c.Close())
	})
}

// Bare metal: the private ip_address answers only through the ssh_access
// front host, and only once the OS is installed.
func TestHotAisleBareMetalSSHThroughFrontHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		defer x.h.Network().Close()
		signer, line := haKeyPair(t, 23, "ops")
		x.ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 200, nil)
		bm := x.reserve("")
		front := fmt.Sprintf("%s:%d", bm.SSHAccess.IPAddress, bm.SSHAccess.Port)
		private := bm.IPAddress + ":22"

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := x.h.Dial(ctx, "tcp", private)
		cancel()
		require.Error(t, err, "a private address is not reachable directly")

		jump, err := haDialSSH(t, x.h, front, signer)
		require.NoError(t, err, "the front host is up at once")
		defer jump.Close()
		_, err = jump.Dial("tcp", private)
		require.Error(t, err, "the OS is still installing")

		time.Sleep(sim.DefaultHotAisleInstallTime)
		conn, err := jump.Dial("tcp", private)
		require.NoError(t, err)
		c, err := haSSH(conn, private, signer)
		require.NoError(t, err)
		require.NoError(t, c.Close())

		x.ok("DELETE", haTeamPath+"bare_metal/"+bm.Name+"/?force=true", nil, 204, nil)
		assert.Nil(t, x.h.Network().Host(front))
		assert.Nil(t, x.h.Network().Host(private))
	})
}
