package sim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

type haRow struct {
	Quantity                  int64           `json:"Quantity"`
	MinimumReservationMinutes int64           `json:"MinimumReservationMinutes"`
	OnDemandPrice             int64           `json:"OnDemandPrice"`
	Specs                     json.RawMessage `json:"Specs"`
}

func TestHotAisleDefaultVMCatalog(t *testing.T) {
	x := haNew(t)
	var rows []haRow
	x.ok("GET", haTeamPath+"virtual_machines/available/", nil, 200, &rows)
	require.Len(t, rows, 5)
	type want struct {
		qty, minutes, price int64
		cores, ram          uint64
		cpu                 string
		gpus                uint64
	}
	const gib = uint64(1) << 30
	wants := []want{
		{8, 30, 299, 13, 240518168576, "Xeon Platinum 8470", 1},
		{0, 30, 299, 8, 240518168576, "Xeon Platinum 8462Y+", 1},
		{4, 60, 598, 26, 2 * 224 * gib, "Xeon Platinum 8470", 2},
		{2, 60, 1196, 52, 4 * 224 * gib, "Xeon Platinum 8470", 4},
		{1, 60, 2392, 104, 8 * 224 * gib, "Xeon Platinum 8470", 8},
	}
	for i, w := range wants {
		r := rows[i]
		assert.Equal(t, w.qty, r.Quantity, i)
		assert.Equal(t, w.minutes, r.MinimumReservationMinutes, i)
		assert.Equal(t, w.price, r.OnDemandPrice, i)
		var s haVM
		require.NoError(t, json.Unmarshal(r.Specs, &s))
		assert.Equal(t, w.cores, s.CPUCores)
		assert.Equal(t, w.ram, s.RAMCapacity)
		assert.Equal(t, uint64(13194139533312), s.DiskCapacity)
		// cpus is one object, not an array; cores = cpu_cores.
		assert.Equal(t, uint64(1), s.CPUs.Count)
		assert.Equal(t, "Intel", s.CPUs.Manufacturer)
		assert.Equal(t, w.cpu, s.CPUs.Model)
		assert.Equal(t, w.cores, s.CPUs.Cores)
		require.Len(t, s.GPUs, 1)
		assert.Equal(t, w.gpus, s.GPUs[0].Count)
		assert.Equal(t, "MI300X", s.GPUs[0].Model)
		assert.Equal(t, "AMD", s.GPUs[0].Manufacturer)
	}
	assert.Contains(t, string(rows[0].Specs), `"frequency":2000000000`)
	assert.NotContains(t, string(rows[0].Specs), `"disks"`)
}

// dstack POSTs the offer's Specs verbatim; the CLI and the docs send partial
// specs.
func TestHotAisleProvisionVM(t *testing.T) {
	x := haNew(t)
	var rows []haRow
	x.ok("GET", haTeamPath+"virtual_machines/available/", nil, 200, &rows)
	var vm haVM
	x.ok("POST", haTeamPath+"virtual_machines/", rows[2].Specs, 200, &vm) // 2x, verbatim
	assert.Regexp(t, regexp.MustCompile(`^enc1-gpuvm\d{3}$`), vm.Name)
	assert.Regexp(t, regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`), vm.IPAddress)
	assert.Equal(t, uint64(26), vm.CPUCores)
	assert.Equal(t, uint64(2), vm.GPUs[0].Count)
	assert.Equal(t, uint64(26), vm.CPUs.Cores)

	var got haVM
	x.ok("GET", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 200, &got)
	assert.Equal(t, vm, got)
	var state struct{ State, Host string }
	x.ok("GET", haTeamPath+"virtual_machines/"+vm.Name+"/state/", nil, 200, &state)
	assert.Equal(t, "running", state.State) // at once
	assert.NotEmpty(t, state.Host)

	x.ok("GET", haTeamPath+"virtual_machines/available/", nil, 200, &rows)
	assert.Equal(t, int64(3), rows[2].Quantity, "the pool shrank")

	// Partial specs: GPU count only; CPU model only; capacities only.
	assert.Equal(t, uint64(4), x.provision(4).GPUs[0].Count)
	var one haVM
	x.ok("POST", haTeamPath+"virtual_machines/", map[string]any{"cpus": map[string]any{"model": "xeon platinum 8470"},
		"ram_capacity": 240518168576}, 200, &one)
	assert.Equal(t, uint64(13), one.CPUCores)

	var list []haVM
	x.ok("GET", haTeamPath+"virtual_machines/", nil, 200, &list)
	assert.Len(t, list, 3)

	// PATCH description → 204, seen in GET and in Resources.
	x.ok("PATCH", haTeamPath+"virtual_machines/"+vm.Name+"/", map[string]string{"description": "fleet=a req=1"}, 204, nil)
	x.ok("GET", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 200, &got)
	assert.Equal(t, "fleet=a req=1", got.Description)
	r := haResource(t, x.h, vm.Name)
	assert.Equal(t, "virtual_machine", r.Kind)
	assert.Equal(t, "vm-mi300x-2", r.Plan)
	assert.Equal(t, sim.HotAisleRegion, r.Region)
	assert.Equal(t, "fleet=a req=1", r.Description)
	assert.Equal(t, "running", r.State)
}

func TestHotAisleProvisionRefusals(t *testing.T) {
	x := haNew(t)
	path := haTeamPath + "virtual_machines/"
	const noStock = "No available virtual machine matching requested specifications"
	// The sold-out row, by its full CPU; an unknown GPU; a size not offered.
	x.fail("POST", path, map[string]any{"cpus": map[string]any{"model": "Xeon Platinum 8462Y+"}}, 404, noStock)
	x.fail("POST", path, map[string]any{"gpus": []map[string]any{{"count": 1, "model": "H100"}}}, 404, noStock)
	x.fail("POST", path, haGPUSpec(3), 404, noStock)
	require.NoError(t, x.h.SoldOut("vm-mi300x-8"))
	x.fail("POST", path, haGPUSpec(8), 404, noStock)
	require.NoError(t, x.h.SetQuantity("vm-mi300x-8", 1))
	x.provision(8)
	require.Error(t, x.h.SetQuantity("vm-h100-1", 1))

	x.h.SetVMLimit(2)
	x.provision(1)
	x.fail("POST", path, haGPUSpec(1), 401, "Maximum VMs already provisioned for this team")
	x.h.SetVMLimit(10)

	x.h.InsufficientBalance()
	x.fail("POST", path, haGPUSpec(1), 402, "Insufficient balance to provision virtual machine")
	var bal struct {
		Available int64 `json:"available_balance"`
		Hourly    int64 `json:"hourly_rate"`
		VMs       int64 `json:"virtual_machine_count"`
	}
	x.ok("GET", haTeamPath+"balance/", nil, 200, &bal)
	assert.Equal(t, int64(0), bal.Available)
	assert.Equal(t, int64(2392+299), bal.Hourly)
	assert.Equal(t, int64(2), bal.VMs)
	// 30 min of a 1x VM cost 149.5 cents: 149 are not enough, 150 are.
	x.h.SetBalance(int64(x.h.Ledger().TotalUSD*100+0.5) + 149)
	x.fail("POST", path, haGPUSpec(1), 402, "Insufficient balance to provision virtual machine")
	x.h.SetBalance(int64(x.h.Ledger().TotalUSD*100+0.5) + 150)
	x.provision(1)
}

// DELETE blocks while the VM is reset (20 s by default), completes even when
// the caller gives up, and returns the VM to the pool.
func TestHotAisleVMDeleteBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t, sim.WithHotAisleSSHDelay(time.Second))
		vm := x.provision(1)
		time.Sleep(31 * time.Minute)
		start := time.Now()
		x.ok("DELETE", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 204, nil)
		assert.Equal(t, sim.DefaultHotAisleDeleteDelay, time.Since(start))
		x.fail("GET", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 404, "Not Found: Resource not found")
		x.fail("DELETE", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 404, "Not Found: Resource not found")
		r := haResource(t, x.h, vm.Name)
		assert.False(t, r.Live())
		assert.Equal(t, "deleted", r.State)

		// A caller that gives up after 5 s: the reset still completes.
		vm = x.provision(1)
		time.Sleep(31 * time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "DELETE", haBase+haTeamPath+"virtual_machines/"+vm.Name+"/", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", sim.DefaultAPIKey)
		_, err = x.c.Do(req)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var state struct{ State string }
		x.ok("GET", haTeamPath+"virtual_machines/"+vm.Name+"/state/", nil, 200, &state)
		assert.Equal(t, "shut off", state.State, "being reset")
		time.Sleep(16 * time.Second)
		x.fail("GET", haTeamPath+"virtual_machines/"+vm.Name+"/", nil, 404, "Not Found: Resource not found")
		var rows []haRow
		x.ok("GET", haTeamPath+"virtual_machines/available/", nil, 200, &rows)
		assert.Equal(t, int64(8), rows[0].Quantity, "both VMs back in the pool")
	})
}

// Scenario S03: before the minimum reservation a DELETE is refused without
// force; with force it goes through and the minimum is charged.
func TestHotAisleVMMinimumReservation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		a, b := x.provision(2), x.provision(2) // 60 min minimum, 598 cents/h
		time.Sleep(5 * time.Minute)
		const refused = "server cannot be released due to minimum usage requirement"
		x.fail("DELETE", haTeamPath+"virtual_machines/"+a.Name+"/", nil, 400, refused)
		x.fail("DELETE", haTeamPath+"virtual_machines/"+a.Name+"/?force=false", nil, 400, refused)
		x.ok("DELETE", haTeamPath+"virtual_machines/"+a.Name+"/?force=true", nil, 204, nil)
		c := haCharge(t, x.h, a.Name)
		assert.False(t, c.Live)
		assert.Equal(t, time.Hour, c.Billed)
		assert.InDelta(t, 5.98, c.USD, 1e-9)
		assert.InDelta(t, 5.98*55/60, c.Unrefunded, 1e-9)

		time.Sleep(55*time.Minute + 30*time.Second) // b: 60.5 min used
		x.ok("DELETE", haTeamPath+"virtual_machines/"+b.Name+"/", nil, 204, nil)
		c = haCharge(t, x.h, b.Name)
		assert.Equal(t, 61*time.Minute, c.Billed, "per started minute, billing ends at the DELETE")
		assert.InDelta(t, 5.98*61/60, c.USD, 1e-9)
		assert.Zero(t, c.Unrefunded)
	})
}

func TestHotAisleVMStopStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		vm := x.provision(1)
		p := haTeamPath + "virtual_machines/" + vm.Name + "/"
		var state struct{ State string }
		x.ok("POST", p+"stop/", nil, 204, nil)
		x.ok("GET", p+"state/", nil, 200, &state)
		assert.Equal(t, "shut off", state.State)
		time.Sleep(time.Hour)
		x.ok("POST", p+"start/", nil, 204, nil)
		x.ok("GET", p+"state/", nil, 200, &state)
		assert.Equal(t, "running", state.State)
		assert.Equal(t, time.Hour, haCharge(t, x.h, vm.Name).Billed, "a stopped VM keeps billing")
		x.fail("POST", haTeamPath+"virtual_machines/enc1-gpuvm999/start/", nil, 404, "Not Found: Resource not found")
		x.fail("DELETE", p+"?force=maybe", nil, 400, "Bad Request: Invalid input")
	})
}
