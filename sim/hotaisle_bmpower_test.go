package sim_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/gpufleet/gpufleet/sim"
)

// haBMPower is a reserved, installed bare-metal server with a registered
// key, for the power-route tests.
type haBMPower struct {
	*haT
	bm     haBM
	base   string // .../bare_metal/{server}/power/
	signer ssh.Signer
}

func haInstalledBM(t *testing.T) *haBMPower {
	x := haNew(t)
	signer, line := haKeyPair(t, 31, "ops")
	x.ok("POST", "/api/user/ssh_keys/", map[string]string{"authorized_key": line}, 200, nil)
	bm := x.reserve("power")
	time.Sleep(sim.DefaultHotAisleInstallTime)
	return &haBMPower{haT: x, bm: bm, base: haTeamPath + "bare_metal/" + bm.Name + "/power/", signer: signer}
}

func (b *haBMPower) power() string {
	b.t.Helper()
	var st struct{ State string }
	b.ok("GET", b.base, nil, 200, &st)
	return st.State
}

func (b *haBMPower) act(op string) { b.t.Helper(); b.ok("POST", b.base+op+"/", nil, 204, nil) }

// up reports whether the server's sshd accepts a connection through its
// front host.
func (b *haBMPower) up() bool {
	b.t.Helper()
	jump, err := haDialSSH(b.t, b.h, b.front(), b.signer)
	if err != nil {
		return false
	}
	defer jump.Close()
	conn, err := jump.Dial("tcp", b.bm.IPAddress+":22")
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func (b *haBMPower) front() string {
	return fmt.Sprintf("%s:%d", b.bm.SSHAccess.IPAddress, b.bm.SSHAccess.Port)
}

// Each action's power timeline on the sim clock, sshd going down and
// coming back the boot time after the power comes on.
func TestHotAisleBareMetalPowerTimelines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := haInstalledBM(t)
		defer b.h.Network().Close()
		require.NotNil(t, b.h.Network().Host(b.front()))

		b.act("graceful_shutdown")
		assert.Equal(t, "On", b.power(), "the OS is halting")
		assert.Nil(t, b.h.Network().Host(b.front()), "sshd goes down with the shutdown")
		time.Sleep(sim.DefaultHotAisleBareMetalShutdownTime)
		assert.Equal(t, "Off", b.power())

		b.act("power_on")
		assert.Equal(t, "On", b.power(), "at once")
		require.NotNil(t, b.h.Network().Host(b.front()))
		assert.False(t, b.up(), "booting")
		time.Sleep(sim.DefaultHotAisleBareMetalBootTime)
		assert.True(t, b.up())

		b.act("warm_reboot")
		assert.Equal(t, "On", b.power(), "the power is not cut")
		assert.False(t, b.up())
		time.Sleep(sim.DefaultHotAisleBareMetalBootTime)
		assert.True(t, b.up())

		b.act("cold_reboot")
		assert.Equal(t, "Off", b.power())
		time.Sleep(sim.DefaultHotAisleBareMetalOffTime)
		assert.Equal(t, "On", b.power())
		assert.False(t, b.up())
		time.Sleep(sim.DefaultHotAisleBareMetalBootTime)
		assert.True(t, b.up())

		b.act("force_shutdown")
		assert.Equal(t, "Off", b.power(), "at once")
		assert.Nil(t, b.h.Network().Host(b.front()))
		b.act("force_shutdown") // already off: nothing changes
		assert.Equal(t, "Off", b.power())

		b.act("ac_reset")
		b.fail("GET", b.base, nil, 500, "Internal Server Error")
		b.fail("POST", b.base+"power_on/", nil, 500, "Internal Server Error")
		time.Sleep(sim.DefaultHotAisleACResetTime)
		assert.Equal(t, "On", b.power(), "back on when the controller is")
		time.Sleep(sim.DefaultHotAisleBareMetalBootTime)
		assert.True(t, b.up())
	})
}

// Refusals: by the power state, while the OS installs, for a server the
// team does not hold and for a key without the operator role.
func TestHotAisleBareMetalPowerRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		bm := x.reserve("power")
		base := haTeamPath + "bare_metal/" + bm.Name + "/power/"
		for _, op := range []string{"power_on", "graceful_shutdown", "force_shutdown", "warm_reboot", "cold_reboot", "ac_reset"} {
			x.fail("POST", base+op+"/", nil, 400, "Bad Request: operating system install in progress")
			x.fail("POST", haTeamPath+"bare_metal/enc1-gpu999/power/"+op+"/", nil, 404, "Not Found: Resource not found")
		}
		time.Sleep(sim.DefaultHotAisleInstallTime)
		x.fail("POST", base+"ac_reset/", nil, 400, "Bad Request: server must be powered off for an AC reset")
		x.ok("POST", base+"power_on/", nil, 204, nil) // on already: nothing changes
		x.ok("POST", base+"force_shutdown/", nil, 204, nil)
		for _, op := range []string{"graceful_shutdown", "warm_reboot", "cold_reboot"} {
			x.fail("POST", base+op+"/", nil, 400, "Bad Request: server is powered off")
		}

		ro := haNew(t, sim.WithHotAisleUserRoleOnly())
		ro.fail("POST", base+"power_on/", nil, 403, "Forbidden: Permission denied")
	})
}

// A server that is off keeps billing, and HaltOutOfBand cancels the
// power-on a cold reboot left pending: it stays off until power_on.
func TestHotAisleBareMetalOffKeepsBillingAndHaltWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := haInstalledBM(t)
		b.act("cold_reboot")
		require.NoError(t, b.h.HaltOutOfBand(b.bm.Name))
		time.Sleep(time.Hour)
		assert.Equal(t, "Off", b.power(), "the halt cancelled the reboot's power-on")
		assert.Nil(t, b.h.Network().Host(b.front()))
		c := haCharge(t, b.h, b.bm.Name)
		assert.True(t, c.Live, "an off server keeps billing")
		assert.Equal(t, "Off", haResource(t, b.h, b.bm.Name).Power)
		b.act("power_on")
		assert.Equal(t, "On", haResource(t, b.h, b.bm.Name).Power)
	})
}

// The power actions run through the pipeline: a fault injected on one
// answers instead of it, and the call log names the route.
func TestHotAisleBareMetalPowerFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := haInstalledBM(t)
		route := "POST /api/teams/{team}/bare_metal/{server}/power/power_on/"
		require.NoError(t, b.h.Inject(sim.Fault{Route: route, Times: 1}))
		b.act("force_shutdown")
		b.fail("POST", b.base+"power_on/", nil, 500, "Internal Server Error")
		assert.Equal(t, "Off", b.power(), "the fault answered instead")
		b.act("power_on")
		assert.Equal(t, "On", b.power())
		n := 0
		for _, c := range b.h.Calls() {
			if c.Route == route {
				n++
			}
		}
		assert.Equal(t, 2, n)
		require.Len(t, b.h.Faults(), 1)
	})
}
