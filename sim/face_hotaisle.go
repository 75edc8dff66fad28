package sim

import "github.com/gpufleet/gpufleet/sim/internal/hotaislefake"

// HotAisle is a fake of the Hot Aisle API (https://admin.hotaisle.app/api/).
// It serves the real paths, all ending in "/" (a path without the trailing
// slash, or one that is not clean, answers 404, never a redirect), takes
// "Authorization: Token <key>" or a bare key, answers errors as a JSON string
// ("Unauthorized", "Not Found: Resource not found", ...), and follows the
// default physics documented on its options and constants. An unknown team
// handle answers 404, a mutation by a key without the operator role 403, a
// bad key 401.
//
// Bare metal is a pool of named servers, as the API's state machine says
// (pool → reserved → released → pool): a released server (DELETE, or
// DestroyOutOfBand) goes back to its catalog row's pool under its name,
// private address and front-host port, and a reservation takes the
// lowest-numbered server back in the pool before one never rented. A server
// reserved again is reinstalled: its OS install starts over, its SSH host
// key is new, and its reservation starts anew (a new ledger charge with the
// minimum, under the same ResourceID; a new Resource with the same ID).
// Names, addresses and keys are the same for the same seed and calls. VMs
// are never reused: every provision has a new name.
type HotAisle = hotaislefake.HotAisle

// DefaultHotAisleVMTypes returns the default VM catalog:
// 1, 2, 4 and 8 MI300X with 13 cores and 224 GiB of RAM per GPU, 12 TiB of
// disk, one Xeon Platinum 8470, 299 US cents per GPU-hour, a minimum
// reservation of 30 min for 1x and 60 min for larger, quantities 8, 4, 2, 1;
// plus a sold-out (Quantity 0) 1x variant with 8 cores of a Xeon Platinum
// 8462Y+, as the real list shows. Plans: "vm-mi300x-1", "vm-mi300x-2",
// "vm-mi300x-4", "vm-mi300x-8", "vm-mi300x-1-8462y".
func DefaultHotAisleVMTypes() []HotAisleVMType { return hotaislefake.DefaultHotAisleVMTypes() }

// DefaultHotAisleBareMetalTypes returns the default bare-metal catalog:
// plan "bm-mi300x-8", a Dell PowerEdge XE9680 with 8 MI300X,
// 2 x 52-core Xeon Platinum 8470 (104 cores), 2 TiB of RAM in 32 x 64 GiB
// modules, 2 x 480 GB SATA SSD M.2 boot drives and 8 x 15.36 TB NVMe,
// 2712 US cents per hour, minimum reservation 480 min, quantity 2.
func DefaultHotAisleBareMetalTypes() []HotAisleBareMetalType {
	return hotaislefake.DefaultHotAisleBareMetalTypes()
}

// HotAisleVMType is one row of GET /api/teams/{team}/virtual_machines/available/
// (AvailableVirtualMachineTypes, PascalCase keys). Plan is the fake's own name
// for the row (not sent), used by Resource.Plan, SetQuantity and the ledger.
type HotAisleVMType = hotaislefake.HotAisleVMType

// HotAisleBareMetalType is one row of
// GET /api/teams/{team}/bare_metal/available/ (AvailableBareMetalTypes).
type HotAisleBareMetalType = hotaislefake.HotAisleBareMetalType

// HotAisleVMSpecs is the spec's VirtualMachineSpecs: capacities in bytes,
// CPUCores the total cores, CPUs a single object (not an array), no disks.
type HotAisleVMSpecs = hotaislefake.HotAisleVMSpecs

// HotAisleBareMetalSpecs is the spec's BareMetalServerSpecs: capacities in
// bytes, CPUs an array, DiskCapacity the total of all Disks.
type HotAisleBareMetalSpecs = hotaislefake.HotAisleBareMetalSpecs

// HotAisleCPU is a Hot Aisle CPUs entry: Count processors of Cores cores each
// at Frequency Hz.
type HotAisleCPU = hotaislefake.HotAisleCPU

// HotAisleGPU is a Hot Aisle GPUs entry (only count is required by the spec).
type HotAisleGPU = hotaislefake.HotAisleGPU

// HotAisleDisk is a Hot Aisle Disks entry: Count drives of Capacity bytes
// each; Type is "NVMe" or "SATA SSD".
type HotAisleDisk = hotaislefake.HotAisleDisk

// HotAisleMemoryModule is a Hot Aisle MemoryModules entry: Count modules of
// Capacity bytes each.
type HotAisleMemoryModule = hotaislefake.HotAisleMemoryModule

// DefaultHotAisleShutdownTime is how long a graceful shutdown
// (POST …/{vm}/shutdown/) shows the state "in shutdown" before "shut off".
const DefaultHotAisleShutdownTime = hotaislefake.DefaultHotAisleShutdownTime

// Physics of the Hot Aisle bare-metal power routes (the spec gives no
// durations; these are the fake's).
const (
	// DefaultHotAisleBareMetalShutdownTime is how long a graceful shutdown
	// (POST …/power/graceful_shutdown/) keeps the power "On" while the
	// operating system halts, before it reads "Off".
	DefaultHotAisleBareMetalShutdownTime = hotaislefake.DefaultHotAisleBareMetalShutdownTime
	// DefaultHotAisleBareMetalOffTime is how long a cold reboot
	// (POST …/power/cold_reboot/) keeps the power "Off" before it is "On"
	// again.
	DefaultHotAisleBareMetalOffTime = hotaislefake.DefaultHotAisleBareMetalOffTime
	// DefaultHotAisleBareMetalBootTime is how long after the power comes on
	// (or a warm reboot) a bare-metal server's sshd accepts connections
	// again.
	DefaultHotAisleBareMetalBootTime = hotaislefake.DefaultHotAisleBareMetalBootTime
	// DefaultHotAisleACResetTime is how long an AC (alternating current, at
	// the mains) reset (POST …/power/ac_reset/) keeps the server's
	// management controller down: its power reads and power actions answer
	// 500 "Internal Server Error" meanwhile, and the power comes back "On"
	// at the end.
	DefaultHotAisleACResetTime = hotaislefake.DefaultHotAisleACResetTime
)

// Default physics of sim.HotAisle, taken from the published API facts and
// what users observed; each is adjustable by an option.
const (
	// DefaultHotAisleSSHDelay is how long after provisioning a VM's sshd
	// starts accepting TCP connections (its state says "running" at once).
	DefaultHotAisleSSHDelay = hotaislefake.DefaultHotAisleSSHDelay
	// DefaultHotAisleDeleteDelay is how long a VM DELETE blocks while the VM
	// is reset.
	DefaultHotAisleDeleteDelay = hotaislefake.DefaultHotAisleDeleteDelay
	// DefaultHotAisleInstallTime is how long a reserved bare-metal server's
	// os_install_status takes to pass first_boot → first_boot_tasks →
	// installed (half the time in each of the first two).
	DefaultHotAisleInstallTime = hotaislefake.DefaultHotAisleInstallTime
	// DefaultHotAisleVMLimit is the team's maximum_virtual_machines.
	DefaultHotAisleVMLimit = hotaislefake.DefaultHotAisleVMLimit
	// DefaultHotAisleBareMetalLimit is the team's maximum_bare_metal_servers.
	DefaultHotAisleBareMetalLimit = hotaislefake.DefaultHotAisleBareMetalLimit
	// DefaultHotAisleBalanceCents is the team's starting balance in US cents
	// ($10,000).
	DefaultHotAisleBalanceCents = hotaislefake.DefaultHotAisleBalanceCents
	// HotAisleRegion is the only location of Hot Aisle (the API has no region
	// field; gpuhunt hard-codes it). It is the Region of every Resource.
	HotAisleRegion = hotaislefake.HotAisleRegion
	// HotAisleUser is the login user of every Hot Aisle server.
	HotAisleUser = hotaislefake.HotAisleUser
)
