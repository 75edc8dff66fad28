package sim_test

import (
	"encoding/json"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

func TestHotAisleDefaultBareMetalCatalog(t *testing.T) {
	x := haNew(t)
	var rows []haRow
	x.ok("GET", haTeamPath+"bare_metal/available/", nil, 200, &rows)
	require.Len(t, rows, 1)
	r := rows[0]
	assert.Equal(t, int64(2), r.Quantity)
	assert.Equal(t, int64(480), r.MinimumReservationMinutes)
	assert.Equal(t, int64(2712), r.OnDemandPrice)
	var s haBM
	require.NoError(t, json.Unmarshal(r.Specs, &s))
	assert.Equal(t, uint64(104), s.CPUCores)
	assert.Equal(t, uint64(2199023255552), s.RAMCapacity)
	assert.Equal(t, uint64(2*480103981056+8*15360000000000), s.DiskCapacity)
	require.Len(t, s.CPUs, 1, "cpus is an array on bare metal")
	require.Len(t, s.Disks, 2)
	assert.Equal(t, "SATA SSD", s.Disks[0].Type)
	assert.Equal(t, uint64(2), s.Disks[0].Count)
	assert.Equal(t, uint64(480103981056), s.Disks[0].Capacity)
	assert.Equal(t, "NVMe", s.Disks[1].Type)
	assert.Equal(t, uint64(8), s.Disks[1].Count)
	assert.Equal(t, uint64(15360000000000), s.Disks[1].Capacity)
	assert.Contains(t, string(r.Specs), `"memory_modules":[{"count":32`)
}

func TestHotAisleReserveBareMetal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		start := time.Now()
		a := x.reserve("training node")
		assert.Regexp(t, `^enc1-gpu\d{3}$`, a.Name)
		ip := netip.MustParseAddr(a.IPAddress)
		assert.True(t, ip.IsPrivate(), "ip_address is private: %s", ip)
		assert.Equal(t, "ssh.hotaisle.cloud", a.SSHAccess.DNSName)
		assert.False(t, netip.MustParseAddr(a.SSHAccess.IPAddress).IsPrivate())
		assert.GreaterOrEqual(t, a.SSHAccess.Port, 22000)
		assert.Less(t, a.SSHAccess.Port, 23000)
		assert.Equal(t, "Dell", a.Manufacturer)
		assert.Equal(t, "training node", a.Description)
		assert.Equal(t, "first_boot", a.OSStatus.OSInstallStatus)
		assert.Equal(t, "ubuntu-2404.4", a.OSStatus.OSSelection)
		assert.Equal(t, uint64(104), a.CPUCores)

		// 8 hours are charged at once.
		c := haCharge(t, x.h, a.Name)
		assert.Equal(t, 8*time.Hour, c.Billed)
		assert.InDelta(t, 8*27.12, c.USD, 1e-9)
		assert.Equal(t, "bare_metal", c.Kind)

		b := x.reserve("")
		assert.NotEqual(t, a.SSHAccess.Port, b.SSHAccess.Port, "one front-host port per server")
		assert.Equal(t, a.SSHAccess.IPAddress, b.SSHAccess.IPAddress, "one shared front host")
		assert.NotEqual(t, a.IPAddress, b.IPAddress)

		// os_install_status: first_boot → first_boot_tasks → installed over 10 min.
		for _, step := range []struct {
			at    time.Duration
			state string
		}{{4 * time.Minute, "first_boot"}, {6 * time.Minute, "first_boot_tasks"}, {10 * time.Minute, "installed"}} {
			time.Sleep(step.at - time.Since(start))
			var got haBM
			x.ok("GET", haTeamPath+"bare_metal/"+a.Name+"/", nil, 200, &got)
			assert.Equal(t, step.state, got.OSStatus.OSInstallStatus, step.at)
			stamp, err := time.Parse(time.RFC3339, got.OSStatus.LastImagingUpdate)
			require.NoError(t, err)
			assert.False(t, stamp.After(time.Now()))
			assert.False(t, stamp.Before(start))
		}
		assert.Equal(t, "installed", haResource(t, x.h, a.Name).State)
		var power struct{ State string }
		x.ok("GET", haTeamPath+"bare_metal/"+a.Name+"/power/", nil, 200, &power)
		assert.Equal(t, "On", power.State)
		x.ok("PATCH", haTeamPath+"bare_metal/"+a.Name+"/", map[string]string{"description": "x"}, 204, nil)
		var list []haBM
		x.ok("GET", haTeamPath+"bare_metal/", nil, 200, &list)
		require.Len(t, list, 2)
		assert.Equal(t, "x", list[0].Description)

		// Sold out, then the release rules (480 min minimum).
		x.fail("POST", haTeamPath+"bare_metal/", map[string]any{"specs": map[string]any{"cpu_cores": 104}},
			404, "no available servers matching specifications")
		const refused = "server cannot be released due to minimum usage requirement"
		x.fail("DELETE", haTeamPath+"bare_metal/"+a.Name+"/", nil, 400, refused)
		x.ok("DELETE", haTeamPath+"bare_metal/"+a.Name+"/?force=true", nil, 204, nil)
		c = haCharge(t, x.h, a.Name)
		assert.InDelta(t, 8*27.12, c.USD, 1e-9, "minimum charged, not refunded")
		assert.InDelta(t, 27.12*470/60, c.Unrefunded, 1e-9)
		x.fail("GET", haTeamPath+"bare_metal/"+a.Name+"/", nil, 404, "Not Found: Resource not found")
		x.fail("DELETE", haTeamPath+"bare_metal/"+a.Name+"/", nil, 404, "server not found or not assigned to team")
		time.Sleep(8 * time.Hour)
		x.ok("DELETE", haTeamPath+"bare_metal/"+b.Name+"/", nil, 204, nil)
		c = haCharge(t, x.h, b.Name)
		assert.Equal(t, 8*time.Hour+10*time.Minute, c.Billed)
		assert.Zero(t, c.Unrefunded)
		var rows []haRow
		x.ok("GET", haTeamPath+"bare_metal/available/", nil, 200, &rows)
		assert.Equal(t, int64(2), rows[0].Quantity, "both servers back in the pool")
	})
}

func TestHotAisleReserveRefusals(t *testing.T) {
	x := haNew(t)
	p := haTeamPath + "bare_metal/"
	x.fail("POST", p, map[string]any{"description": "no specs"}, 400, "invalid specifications")
	x.fail("POST", p, map[string]any{"specs": map[string]any{}}, 400, "invalid specifications")
	x.fail("POST", p, map[string]any{"specs": map[string]any{"cpu_cores": "104"}}, 422,
		"Unprocessable Entity: Invalid data format")
	x.fail("POST", p, map[string]any{"specs": map[string]any{"cpus": map[string]any{"count": 2}}}, 422,
		"Unprocessable Entity: Invalid data format") // an object where the spec says array
	x.fail("POST", p, map[string]any{"specs": map[string]any{"cpu_cores": 64}}, 404,
		"no available servers matching specifications")
	x.h.SetBareMetalLimit(1)
	x.reserve("")
	x.fail("POST", p, map[string]any{"specs": map[string]any{"cpu_cores": 104}}, 403, "tenant limit exceeded")
	x.h.SetBareMetalLimit(5)
	x.h.InsufficientBalance()
	x.fail("POST", p, map[string]any{"specs": map[string]any{"cpu_cores": 104}}, 402, "insufficient balance")
	x.h.SetBalance(sim.DefaultHotAisleBalanceCents)
	x.reserve("")
}
