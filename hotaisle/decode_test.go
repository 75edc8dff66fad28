package hotaisle

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeE1VMTypes(t *testing.T) {
	var rows []VMType
	require.NoError(t, json.Unmarshal([]byte(e1VMTypes), &rows))
	require.Len(t, rows, 3)
	assert.Equal(t, VMType{Quantity: 3, MinimumReservationMinutes: 30, OnDemandPrice: 299, Specs: VMSpecs{
		CPUCores: 13, RAMCapacity: 240518168576, DiskCapacity: 13194139533312,
		CPUs: &CPU{Count: 1, Manufacturer: "Intel", Model: "Xeon Platinum 8470", Cores: 13, Frequency: 2000000000},
		GPUs: []GPU{{Count: 1, Manufacturer: "AMD", Model: "MI300X"}},
	}}, rows[0])
	assert.Zero(t, rows[1].Quantity, "sold-out rows are listed")
	assert.Equal(t, "Xeon Platinum 8462Y+", rows[1].Specs.CPUs.Model)
	assert.Equal(t, int64(60), rows[2].MinimumReservationMinutes)
	assert.Equal(t, int64(598), rows[2].OnDemandPrice, "US cents per hour, whole VM")
	assert.Equal(t, uint64(2), rows[2].Specs.GPUs[0].Count)
}

func TestDecodeE2BareMetalTypes(t *testing.T) {
	var rows []BareMetalType
	require.NoError(t, json.Unmarshal([]byte(e2BareMetalTypes), &rows))
	require.Len(t, rows, 1)
	r := rows[0]
	assert.Equal(t, int64(480), r.MinimumReservationMinutes)
	assert.Equal(t, int64(2712), r.OnDemandPrice)
	assert.Equal(t, CPUList{{Count: 2, Manufacturer: "Intel", Model: "Xeon Platinum 8462Y+", Cores: 32, Frequency: 2800000000}}, r.Specs.CPUs)
	assert.Equal(t, []Disk{
		{Count: 2, Manufacturer: "Dell", Model: "BOSS-N1", Type: DiskSATASSD, Capacity: 480103981056},
		{Count: 8, Manufacturer: "Samsung", Model: "PM1733a", Type: DiskNVMe, Capacity: 15360000000000},
	}, r.Specs.Disks)
	assert.Equal(t, []MemoryModule{{Count: 32, Manufacturer: "Samsung", Model: "DDR5-4800 RDIMM", Capacity: 68719476736}}, r.Specs.MemoryModules)
	assert.Equal(t, uint64(2199023255552), r.Specs.RAMCapacity)
}

func TestDecodeE4E6VMs(t *testing.T) {
	var vm VM
	require.NoError(t, json.Unmarshal([]byte(e4VM), &vm))
	assert.Equal(t, "enc1-gpuvm022", vm.Name)
	assert.Equal(t, "203.0.113.42", vm.IPAddress)
	assert.Nil(t, vm.SSHAccess)
	assert.Equal(t, uint64(13), vm.CPUCores)
	assert.Equal(t, uint64(13), vm.CPUs.Cores)
	assert.Equal(t, "203.0.113.42:22", vm.SSHAddr())

	var vms []VM
	require.NoError(t, json.Unmarshal([]byte(e6VMs), &vms))
	require.Len(t, vms, 1)
	assert.Equal(t, "ci-runner-1", vms[0].Description)
	assert.Equal(t, &ExternalService{IPAddress: "203.0.113.42", Port: 22}, vms[0].SSHAccess)
}

func TestDecodeE5State(t *testing.T) {
	var st VMState
	require.NoError(t, json.Unmarshal([]byte(e5State), &st))
	assert.Equal(t, VMState{State: VMRunning, Host: "enc1-gpuhost07"}, st)
}

func TestDecodeE7E8BareMetal(t *testing.T) {
	var bm BareMetal
	require.NoError(t, json.Unmarshal([]byte(e7Server), &bm))
	assert.Equal(t, "10.20.4.12", bm.IPAddress)
	assert.Equal(t, "PowerEdge XE9680", bm.Model)
	assert.Equal(t, "198.51.100.7:22013", bm.SSHAddr(), "bare metal is reached through the SSH front")
	assert.Equal(t, "ssh.hotaisle.cloud", bm.SSHAccess.DNSName)
	require.NotNil(t, bm.OSStatus)
	assert.Equal(t, OSInstalled, bm.OSStatus.OSInstallStatus)
	assert.Equal(t, time.Date(2026, 6, 20, 14, 3, 11, 512000000, time.UTC), bm.OSStatus.LastImagingUpdate)
	assert.Equal(t, uint64(8), bm.GPUs[0].Count)

	var re BareMetal
	require.NoError(t, json.Unmarshal([]byte(e8Reinstalling), &re))
	assert.Equal(t, "installing_os", re.OSStatus.OSInstallStatus)
	assert.Equal(t, time.Date(2026, 6, 21, 9, 41, 27, 0, time.UTC), re.OSStatus.LastImagingUpdate)
	assert.Nil(t, re.SSHAccess)
	assert.Equal(t, "10.20.4.12:22", re.SSHAddr())
}

func TestDecodeE9E10(t *testing.T) {
	var k SSHKey
	require.NoError(t, json.Unmarshal([]byte(e9Key), &k))
	assert.Equal(t, SSHKey{Type: "ssh-ed25519", PublicKey: "AAAAC3NzaC1lZDI1NTE5AAAAIHk", Fingerprint: e9Fingerprint, Comment: "ci@build"}, k)

	var u UserInfo
	require.NoError(t, json.Unmarshal([]byte(e10User), &u))
	assert.Equal(t, User{Name: "Jane Ops", Email: "jane@acme.test", Created: time.Date(2025, 8, 1, 12, 0, 0, 0, time.UTC)}, u.User)
	require.Len(t, u.Teams, 1)
	assert.Equal(t, int64(4), u.Teams[0].MaximumVirtualMachines)
	assert.True(t, u.Teams[0].HasRole(RoleOperator))
	assert.False(t, u.Teams[0].HasRole(RoleOwner), "effective roles win over the user's roles")
}

func TestDecodeIsLenient(t *testing.T) {
	// Unknown fields, absent optional fields, "" and null, GPUs without
	// manufacturer or model, a deployment_id nobody documented.
	const drift = `{"name": "vm-x", "ip_address": "", "description": null, "deployment_id": "0b7c",
	  "cpu_cores": 8, "ram_capacity": 1, "disk_capacity": 2, "cpus": null, "ssh_access": null,
	  "gpus": [{"count": 1}, {"count": 2, "manufacturer": "", "model": null, "memory": 192}],
	  "future": {"nested": [1, 2, 3]}}`
	var vm VM
	require.NoError(t, json.Unmarshal([]byte(drift), &vm))
	assert.Equal(t, VM{Name: "vm-x", VMSpecs: VMSpecs{CPUCores: 8, RAMCapacity: 1, DiskCapacity: 2,
		GPUs: []GPU{{Count: 1}, {Count: 2}}}}, vm)
	assert.Empty(t, vm.SSHAddr())

	const bmDrift = `{"name": "bm", "ip_address": "10.0.0.1", "manufacturer": "Dell", "model": "XE9680",
	  "cpus": {"count": 2, "cores": 52, "frequency": 1}, "disks": null, "support_access_enabled": null,
	  "os_status": {"os_selection": "ubuntu-2604", "os_install_status": "first_boot", "last_imaging_update": ""}}`
	var bm BareMetal
	require.NoError(t, json.Unmarshal([]byte(bmDrift), &bm))
	assert.Equal(t, CPUList{{Count: 2, Cores: 52, Frequency: 1}}, bm.CPUs, "one object decodes as a list of one")
	assert.Nil(t, bm.Disks)
	assert.True(t, bm.OSStatus.LastImagingUpdate.IsZero())

	for _, ts := range []string{`null`, `"yesterday"`, `12`} {
		var s OSStatus
		require.NoError(t, json.Unmarshal([]byte(`{"os_install_status":"failed","last_imaging_update":`+ts+`}`), &s), ts)
		assert.True(t, s.LastImagingUpdate.IsZero(), ts)
		assert.Equal(t, OSFailed, s.OSInstallStatus)
	}

	var row VMType
	require.NoError(t, json.Unmarshal([]byte(`{"Quantity": 2, "MinimumReservationMinutes": 30, "Specs": {"cpu_cores": 13}}`), &row))
	assert.Zero(t, row.OnDemandPrice, "OnDemandPrice is optional")

	var u UserInfo
	require.NoError(t, json.Unmarshal([]byte(`{"user": {"name": "x", "email": "y", "created": ""}, "teams": null}`), &u))
	assert.True(t, u.User.Created.IsZero())
	var d TeamDetails
	require.NoError(t, json.Unmarshal([]byte(`{"handle": "acme", "name": "Acme", "members": [{"name": "a", "email": "b", "created": "2025-04-10T14:30:00Z", "roles": ["user"]}], "virtual_machines": [{"name": "vm1", "ip_address": "203.0.113.9"}]}`), &d))
	assert.Equal(t, "acme", d.Handle)
	assert.Equal(t, 2025, d.Members[0].Created.Year())
	assert.Equal(t, "vm1", d.VirtualMachines[0].Name)
}

func TestDecodeRejectsWrongShapeLoudly(t *testing.T) {
	c, m := newMock(t)
	m.on("GET", "/teams/acme/virtual_machines/", 200, `{"not": "a list"}`)
	_, err := c.ListVMs(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "decode")
}

func TestEncodeRoundTripKeepsShapes(t *testing.T) {
	var rows []BareMetalType
	require.NoError(t, json.Unmarshal([]byte(e2BareMetalTypes), &rows))
	b, err := json.Marshal(BareMetalReservation{Specs: rows[0].Specs})
	require.NoError(t, err)
	var back map[string]map[string]any
	require.NoError(t, json.Unmarshal(b, &back))
	assert.IsType(t, []any{}, back["specs"]["cpus"], "bare-metal cpus stays an array")
	b, err = json.Marshal(VMProvisionRequest{VMSpecs: VMSpecs{CPUs: &CPU{Count: 1}}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"cpus":{"count":1}}`, string(b), "VM cpus stays one object; unset parts of a partial spec are omitted")
}
