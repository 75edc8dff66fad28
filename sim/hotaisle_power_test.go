package sim_test

import (
	"strconv"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

// haState reads a VM's state/.
func (x *haT) state(name string) string {
	x.t.Helper()
	var st struct{ State string }
	x.ok("GET", haTeamPath+"virtual_machines/"+name+"/state/", nil, 200, &st)
	return st.State
}

// shutdown, reboot and hard-reset: the states, sshd going down and coming
// back the SSH delay later, billing going on while stopped.
func TestHotAisleVMPowerRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		defer x.h.Network().Close()
		vm := x.provision(1)
		p := haTeamPath + "virtual_machines/" + vm.Name + "/"
		addr := vm.IPAddress + ":22"
		signer, line := haKeyPair(t, 5, "ops")
		x.ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 200, nil)
		time.Sleep(sim.DefaultHotAisleSSHDelay)
		c, err := haDialSSH(t, x.h, addr, signer)
		require.NoError(t, err)
		c.Close()

		for _, op := range []string{"reboot/", "hard-reset/"} {
			x.ok("POST", p+op, nil, 204, nil)
			assert.Equal(t, "running", x.state(vm.Name))
			_, err = haDialSSH(t, x.h, addr, signer)
			require.ErrorIs(t, err, syscall.ECONNREFUSED, "%s: sshd restarting", op)
			time.Sleep(sim.DefaultHotAisleSSHDelay)
			c, err = haDialSSH(t, x.h, addr, signer)
			require.NoError(t, err, op)
			c.Close()
		}

		x.ok("POST", p+"shutdown/", nil, 204, nil)
		assert.Equal(t, "in shutdown", x.state(vm.Name))
		assert.Nil(t, x.h.Network().Host(addr))
		time.Sleep(sim.DefaultHotAisleShutdownTime)
		assert.Equal(t, "shut off", x.state(vm.Name))
		for _, op := range []string{"reboot/", "hard-reset/", "shutdown/"} {
			x.fail("POST", p+op, nil, 400, "Bad Request: virtual machine is not running")
		}
		x.ok("POST", p+"stop/", nil, 204, nil) // already off: nothing changes
		time.Sleep(time.Hour)
		c0 := haCharge(t, x.h, vm.Name)
		assert.True(t, c0.Live, "a stopped VM keeps billing")
		assert.Equal(t, 65*time.Minute, c0.Billed, "4 min 40 s, then an hour: 65 started minutes")
		x.ok("POST", p+"start/", nil, 204, nil)
		assert.Equal(t, "running", x.state(vm.Name))
		x.ok("POST", p+"start/", nil, 204, nil) // already running: sshd is not restarted
		time.Sleep(sim.DefaultHotAisleSSHDelay)
		c, err = haDialSSH(t, x.h, addr, signer)
		require.NoError(t, err)
		c.Close()
	})
}

func TestHotAisleHaltOutOfBand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		vm := x.provision(1)
		bm := x.reserve("bm")
		require.NoError(t, x.h.HaltOutOfBand(vm.Name))
		require.NoError(t, x.h.HaltOutOfBand(bm.Name))
		assert.Equal(t, "shut off", x.state(vm.Name))
		var power struct{ State string }
		x.ok("GET", haTeamPath+"bare_metal/"+bm.Name+"/power/", nil, 200, &power)
		assert.Equal(t, "Off", power.State)
		assert.Nil(t, x.h.Network().Host(vm.IPAddress+":22"))
		assert.Nil(t, x.h.Network().Host(bm.SSHAccess.IPAddress+":"+strconv.Itoa(bm.SSHAccess.Port)))
		for _, r := range x.h.LiveResources("") {
			switch r.Kind {
			case sim.KindVirtualMachine:
				assert.Equal(t, "shut off", r.Power)
			case sim.KindBareMetal:
				assert.Equal(t, "Off", r.Power)
			}
		}
		assert.True(t, haCharge(t, x.h, vm.Name).Live)
		x.ok("POST", haTeamPath+"virtual_machines/"+vm.Name+"/start/", nil, 204, nil)
		assert.Equal(t, "running", x.state(vm.Name))
		assert.Error(t, x.h.HaltOutOfBand("enc1-nope"))
	})
}

func TestHotAisleRelabelAndDestroyOutOfBand(t *testing.T) {
	x := haNew(t)
	vm := x.provision(1)
	require.NoError(t, x.h.RelabelOutOfBand(vm.Name, "someone else's"))
	var got haVM
	x.ok("GET", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 200, &got)
	assert.Equal(t, "someone else's", got.Description)
	require.NoError(t, x.h.DestroyOutOfBand(vm.Name))
	x.fail("GET", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 404, "Not Found: Resource not found")
	assert.Error(t, x.h.DestroyOutOfBand(vm.Name))
	assert.Error(t, x.h.RelabelOutOfBand(vm.Name, "x"))
	assert.Empty(t, x.h.LiveResources(sim.KindVirtualMachine))
}

// A deleted VM's address goes to the next VM, with a new host key.
func TestHotAisleReuseReleasedIPs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t, sim.WithHotAisleDeleteDelay(0))
		x.h.ReuseReleasedIPs(true)
		old := x.provision(1)
		oldKey := x.h.Network().Host(old.IPAddress + ":22").PublicKey()
		x.ok("DELETE", haTeamPath+"virtual_machines/"+old.Name+"/?force=true", nil, 204, nil)
		fresh := x.provision(1)
		assert.Equal(t, old.IPAddress, fresh.IPAddress)
		assert.NotEqual(t, old.Name, fresh.Name)
		host := x.h.Network().Host(fresh.IPAddress + ":22")
		require.NotNil(t, host)
		assert.NotEqual(t, oldKey.Marshal(), host.PublicKey().Marshal())
		x.h.ReuseReleasedIPs(false)
		x.ok("DELETE", haTeamPath+"virtual_machines/"+fresh.Name+"/?force=true", nil, 204, nil)
		assert.NotEqual(t, fresh.IPAddress, x.provision(1).IPAddress)
	})
}

func TestHotAisleSoldOutAfterListing(t *testing.T) {
	x := haNew(t)
	require.NoError(t, x.h.SoldOutAfterListing("vm-mi300x-1"))
	var rows []haRow
	x.ok("GET", haTeamPath+"virtual_machines/available/", nil, 200, &rows)
	assert.Positive(t, rows[0].Quantity, "still listed")
	x.fail("POST", haTeamPath+"virtual_machines/", haGPUSpec(1), 404,
		"No available virtual machine matching requested specifications")
	require.NoError(t, x.h.SetQuantity("vm-mi300x-1", 3))
	x.provision(1)
	assert.Error(t, x.h.SoldOutAfterListing("nope"))
}

func TestHotAisleVisibilityLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t, sim.WithVisibilityLag(20*time.Second))
		vm := x.provision(1)
		bm := x.reserve("b")
		p := haTeamPath + "virtual_machines/" + vm.Name + "/"
		x.fail("GET", p, nil, 404, "Not Found: Resource not found")
		x.fail("GET", p+"state/", nil, 404, "Not Found: Resource not found")
		x.fail("GET", haTeamPath+"bare_metal/"+bm.Name+"/", nil, 404, "Not Found: Resource not found")
		var list []haVM
		x.ok("GET", haTeamPath+"virtual_machines/", nil, 200, &list)
		assert.Empty(t, list)
		x.ok("PATCH", p, map[string]string{"description": "mine"}, 204, nil) // mutations see it
		time.Sleep(20 * time.Second)
		x.ok("GET", haTeamPath+"virtual_machines/", nil, 200, &list)
		require.Len(t, list, 1)
		assert.Equal(t, "mine", list[0].Description)
	})
}
