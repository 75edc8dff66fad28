package hotaislefake

import (
	"strconv"
	"strings"
)

// Sizes of the default Hot Aisle catalog, in bytes (the API's unit).
const (
	haGiB          = uint64(1) << 30
	haVMRAMPerGPU  = 224 * haGiB       // 240518168576
	haVMDisk       = 12 * 1024 * haGiB // 12 TiB = 13194139533312
	haBMRAM        = 2048 * haGiB      // 2 TiB
	haBootDisk     = 480103981056      // 480 GB M.2 SATA SSD
	haNVMeDisk     = 15360000000000    // 15.36 TB NVMe
	haXeonFreqHz   = 2000000000        // Xeon Platinum 8470, 2.0 GHz
	haXeonYFreqHz  = 2800000000        // Xeon Platinum 8462Y+, 2.8 GHz
	haCentsPerGPU  = 299               // VM price, US cents per GPU-hour
	haBMPriceCents = 2712              // bare metal, US cents per hour
)

// HotAisleCPU is a Hot Aisle CPUs entry: Count processors of Cores cores each
// at Frequency Hz.
type HotAisleCPU struct {
	Count        uint64 `json:"count"`
	Manufacturer string `json:"manufacturer"`
	Model        string `json:"model"`
	Cores        uint64 `json:"cores"`
	Frequency    uint64 `json:"frequency"`
}

// HotAisleGPU is a Hot Aisle GPUs entry (only count is required by the spec).
type HotAisleGPU struct {
	Count        uint64 `json:"count"`
	Manufacturer string `json:"manufacturer,omitempty"`
	Model        string `json:"model,omitempty"`
}

// HotAisleDisk is a Hot Aisle Disks entry: Count drives of Capacity bytes
// each; Type is "NVMe" or "SATA SSD".
type HotAisleDisk struct {
	Count        uint64 `json:"count"`
	Manufacturer string `json:"manufacturer"`
	Model        string `json:"model"`
	Type         string `json:"type"`
	Capacity     uint64 `json:"capacity"`
}

// HotAisleMemoryModule is a Hot Aisle MemoryModules entry: Count modules of
// Capacity bytes each.
type HotAisleMemoryModule struct {
	Count        uint64 `json:"count"`
	Manufacturer string `json:"manufacturer"`
	Model        string `json:"model"`
	Capacity     uint64 `json:"capacity"`
}

// HotAisleVMSpecs is the spec's VirtualMachineSpecs: capacities in bytes,
// CPUCores the total cores, CPUs a single object (not an array), no disks.
type HotAisleVMSpecs struct {
	CPUCores     uint64        `json:"cpu_cores"`
	RAMCapacity  uint64        `json:"ram_capacity"`
	DiskCapacity uint64        `json:"disk_capacity"`
	CPUs         *HotAisleCPU  `json:"cpus,omitempty"`
	GPUs         []HotAisleGPU `json:"gpus,omitempty"`
}

// HotAisleBareMetalSpecs is the spec's BareMetalServerSpecs: capacities in
// bytes, CPUs an array, DiskCapacity the total of all Disks.
type HotAisleBareMetalSpecs struct {
	CPUCores      uint64                 `json:"cpu_cores"`
	RAMCapacity   uint64                 `json:"ram_capacity"`
	DiskCapacity  uint64                 `json:"disk_capacity"`
	CPUs          []HotAisleCPU          `json:"cpus,omitempty"`
	Disks         []HotAisleDisk         `json:"disks,omitempty"`
	GPUs          []HotAisleGPU          `json:"gpus,omitempty"`
	MemoryModules []HotAisleMemoryModule `json:"memory_modules,omitempty"`
}

// HotAisleVMType is one row of GET /api/teams/{team}/virtual_machines/available/
// (AvailableVirtualMachineTypes, PascalCase keys). Plan is the fake's own name
// for the row (not sent), used by Resource.Plan, SetQuantity and the ledger.
type HotAisleVMType struct {
	Plan                      string          `json:"-"`
	Quantity                  int64           `json:"Quantity"`
	MinimumReservationMinutes int64           `json:"MinimumReservationMinutes"`
	OnDemandPrice             int64           `json:"OnDemandPrice"` // US cents per hour, whole VM
	Specs                     HotAisleVMSpecs `json:"Specs"`
}

// HotAisleBareMetalType is one row of
// GET /api/teams/{team}/bare_metal/available/ (AvailableBareMetalTypes).
type HotAisleBareMetalType struct {
	Plan                      string                 `json:"-"`
	Quantity                  int64                  `json:"Quantity"`
	MinimumReservationMinutes int64                  `json:"MinimumReservationMinutes"`
	OnDemandPrice             int64                  `json:"OnDemandPrice"` // US cents per hour
	Specs                     HotAisleBareMetalSpecs `json:"Specs"`
}

// DefaultHotAisleVMTypes returns the default VM catalog:
// 1, 2, 4 and 8 MI300X with 13 cores and 224 GiB of RAM per GPU, 12 TiB of
// disk, one Xeon Platinum 8470, 299 US cents per GPU-hour, a minimum
// reservation of 30 min for 1x and 60 min for larger, quantities 8, 4, 2, 1;
// plus a sold-out (Quantity 0) 1x variant with 8 cores of a Xeon Platinum
// 8462Y+, as the real list shows. Plans: "vm-mi300x-1", "vm-mi300x-2",
// "vm-mi300x-4", "vm-mi300x-8", "vm-mi300x-1-8462y".
func DefaultHotAisleVMTypes() []HotAisleVMType {
	row := func(gpus, qty int64) HotAisleVMType {
		minutes := int64(60)
		if gpus == 1 {
			minutes = 30
		}
		cores := uint64(13 * gpus)
		return HotAisleVMType{
			Plan:                      "vm-mi300x-" + strconv.FormatInt(gpus, 10),
			Quantity:                  qty,
			MinimumReservationMinutes: minutes,
			OnDemandPrice:             haCentsPerGPU * gpus,
			Specs: HotAisleVMSpecs{
				CPUCores: cores, RAMCapacity: haVMRAMPerGPU * uint64(gpus), DiskCapacity: haVMDisk,
				CPUs: &HotAisleCPU{Count: 1, Manufacturer: "Intel", Model: "Xeon Platinum 8470",
					Cores: cores, Frequency: haXeonFreqHz},
				GPUs: []HotAisleGPU{{Count: uint64(gpus), Manufacturer: "AMD", Model: "MI300X"}},
			},
		}
	}
	soldOut := row(1, 0)
	soldOut.Plan = "vm-mi300x-1-8462y"
	soldOut.Specs.CPUCores = 8
	soldOut.Specs.CPUs = &HotAisleCPU{Count: 1, Manufacturer: "Intel", Model: "Xeon Platinum 8462Y+",
		Cores: 8, Frequency: haXeonYFreqHz}
	return []HotAisleVMType{row(1, 8), soldOut, row(2, 4), row(4, 2), row(8, 1)}
}

// DefaultHotAisleBareMetalTypes returns the default bare-metal catalog:
// plan "bm-mi300x-8", a Dell PowerEdge XE9680 with 8 MI300X,
// 2 x 52-core Xeon Platinum 8470 (104 cores), 2 TiB of RAM in 32 x 64 GiB
// modules, 2 x 480 GB SATA SSD M.2 boot drives and 8 x 15.36 TB NVMe,
// 2712 US cents per hour, minimum reservation 480 min, quantity 2.
func DefaultHotAisleBareMetalTypes() []HotAisleBareMetalType {
	disks := []HotAisleDisk{
		{Count: 2, Manufacturer: "Dell", Model: "BOSS-N1 M.2", Type: "SATA SSD", Capacity: haBootDisk},
		{Count: 8, Manufacturer: "Samsung", Model: "PM1733a", Type: "NVMe", Capacity: haNVMeDisk},
	}
	return []HotAisleBareMetalType{{
		Plan:                      "bm-mi300x-8",
		Quantity:                  2,
		MinimumReservationMinutes: 480,
		OnDemandPrice:             haBMPriceCents,
		Specs: HotAisleBareMetalSpecs{
			CPUCores:     104,
			RAMCapacity:  haBMRAM,
			DiskCapacity: 2*haBootDisk + 8*haNVMeDisk,
			CPUs: []HotAisleCPU{{Count: 2, Manufacturer: "Intel", Model: "Xeon Platinum 8470",
				Cores: 52, Frequency: haXeonFreqHz}},
			Disks: disks,
			GPUs:  []HotAisleGPU{{Count: 8, Manufacturer: "AMD", Model: "MI300X"}},
			MemoryModules: []HotAisleMemoryModule{{Count: 32, Manufacturer: "Samsung",
				Model: "DDR5-4800 RDIMM", Capacity: 64 * haGiB}},
		},
	}}
}

// Matching rule of provision and reserve requests: a request may give any
// subset of the spec fields (the official CLI sends partial specs, dstack the
// full row verbatim). A row matches when every field the request gives
// (non-zero numbers, non-empty strings) equals the row's: cpu_cores,
// ram_capacity, disk_capacity; each given cpus field; for each requested GPU
// entry a row entry with the same count and, if given, the same model and
// manufacturer (case-insensitive). Disks and memory modules of a bare-metal
// request are ignored. The first matching row with Quantity > 0, in catalog
// order, is used.

func haMatchVM(req, row HotAisleVMSpecs) bool {
	if !haMatchCaps(req.CPUCores, req.RAMCapacity, req.DiskCapacity,
		row.CPUCores, row.RAMCapacity, row.DiskCapacity) {
		return false
	}
	if req.CPUs != nil && (row.CPUs == nil || !haMatchCPU(*req.CPUs, *row.CPUs)) {
		return false
	}
	return haMatchGPUs(req.GPUs, row.GPUs)
}

func haMatchBareMetal(req, row HotAisleBareMetalSpecs) bool {
	if !haMatchCaps(req.CPUCores, req.RAMCapacity, req.DiskCapacity,
		row.CPUCores, row.RAMCapacity, row.DiskCapacity) {
		return false
	}
	for _, c := range req.CPUs {
		found := false
		for _, rc := range row.CPUs {
			found = found || haMatchCPU(c, rc)
		}
		if !found {
			return false
		}
	}
	return haMatchGPUs(req.GPUs, row.GPUs)
}

func haMatchCaps(cores, ram, disk, rowCores, rowRAM, rowDisk uint64) bool {
	return haEq(cores, rowCores) && haEq(ram, rowRAM) && haEq(disk, rowDisk)
}

func haEq(want, have uint64) bool { return want == 0 || want == have }

func haEqStr(want, have string) bool { return want == "" || strings.EqualFold(want, have) }

func haMatchCPU(req, row HotAisleCPU) bool {
	return haEq(req.Count, row.Count) && haEq(req.Cores, row.Cores) && haEq(req.Frequency, row.Frequency) &&
		haEqStr(req.Manufacturer, row.Manufacturer) && haEqStr(req.Model, row.Model)
}

func haMatchGPUs(req, row []HotAisleGPU) bool {
	for _, g := range req {
		found := false
		for _, rg := range row {
			if haEq(g.Count, rg.Count) && haEqStr(g.Model, rg.Model) && haEqStr(g.Manufacturer, rg.Manufacturer) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// haEmptyVMSpecs reports whether a provision request names nothing at all.
func haEmptyVMSpecs(s HotAisleVMSpecs) bool {
	return s.CPUCores == 0 && s.RAMCapacity == 0 && s.DiskCapacity == 0 && s.CPUs == nil && len(s.GPUs) == 0
}

func haEmptyBareMetalSpecs(s HotAisleBareMetalSpecs) bool {
	return s.CPUCores == 0 && s.RAMCapacity == 0 && s.DiskCapacity == 0 && len(s.CPUs) == 0 &&
		len(s.GPUs) == 0 && len(s.Disks) == 0 && len(s.MemoryModules) == 0
}
