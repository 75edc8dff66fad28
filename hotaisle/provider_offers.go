package hotaisle

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// Region is the one location Hot Aisle rents from; the API has no region
// field (gpuhunt and dstack use this name).
const Region = "us-michigan-1"

// bareMetalNVMeMounts are where Hot Aisle's bare-metal image mounts its eight
// NVMe data drives, in drive order.
var bareMetalNVMeMounts = []string{"/mnt/nvme0n1p1", "/mnt/nvme1n1p1", "/mnt/nvme2n1p1", "/mnt/nvme3n1p1",
	"/mnt/nvme5n1p1", "/mnt/nvme6n1p1", "/mnt/nvme7n1p1", "/mnt/nvme8n1p1"}

// gpuMemoryGiB is the memory per device of the GPU models Hot Aisle rents.
var gpuMemoryGiB = map[string]float64{"MI300X": 192, "MI325X": 256, "MI355X": 288}

const gib = 1 << 30

// floorGiB converts bytes to whole GiB, rounding down (a disk is never
// promised larger than it is).
func floorGiB(b uint64) float64 { return math.Floor(float64(b) / gib) }

// instanceType names an offer: "vm-mi300x-2", "bm-mi300x-8"; the CPU model
// varies between rows of one type but not the price, so it is not part of
// the name. A row without GPUs is "vm-cpu-<cores>".
func instanceType(kind string, gpus []GPU, cores uint64) string {
	if len(gpus) == 0 || gpus[0].Count == 0 {
		return fmt.Sprintf("%s-cpu-%d", kind, cores)
	}
	model := strings.ToLower(gpus[0].Model)
	if model == "" {
		model = "gpu"
	}
	return fmt.Sprintf("%s-%s-%d", kind, model, totalGPUs(gpus))
}

func totalGPUs(gpus []GPU) int {
	n := 0
	for _, g := range gpus {
		n += int(g.Count)
	}
	return n
}

func offerGPU(gpus []GPU) fleet.GPU {
	if len(gpus) == 0 {
		return fleet.GPU{}
	}
	g := gpus[0]
	vendor := g.Manufacturer
	if vendor == "" && strings.HasPrefix(strings.ToUpper(g.Model), "MI") {
		vendor = "AMD"
	}
	return fleet.GPU{Vendor: vendor, Model: g.Model, Count: totalGPUs(gpus), MemoryGiB: gpuMemoryGiB[strings.ToUpper(g.Model)]}
}

// vmOffer converts one VM type row. Units: price from US cents per hour for
// the whole VM, memory and disk from bytes to GiB.
func vmOffer(row VMType) fleet.Offer {
	s := row.Specs
	o := fleet.Offer{Provider: fleet.ProviderHotAisle, Region: Region, InstanceType: instanceType("vm", s.GPUs, s.CPUCores),
		CPUArch: "x86", VCPUs: int(s.CPUCores), MemoryGiB: floorGiB(s.RAMCapacity), DiskGiB: floorGiB(s.DiskCapacity),
		GPU: offerGPU(s.GPUs), PricePerHour: float64(row.OnDemandPrice) / 100,
		MinimumReservation: time.Duration(row.MinimumReservationMinutes) * time.Minute,
		BillingGranularity: time.Minute, Available: row.Quantity > 0, Quantity: int(row.Quantity),
		LabelAfterCreate: true, ProviderData: s}
	if s.CPUs != nil {
		o.CPUModel = s.CPUs.Model
	}
	return o
}

// BareMetalTypicalBoot is how long a reserved bare-metal server usually
// takes to install its OS (os_install_status first_boot → installed).
const BareMetalTypicalBoot = 10 * time.Minute

// BareMetalProvisionTimeout is the provisioning deadline of bare-metal
// offers: the install usually takes 10 minutes but can take several times
// that. (The Manager keeps a server that misses it inside its 8 prepaid
// hours anyway: releasing it earlier refunds nothing.)
const BareMetalProvisionTimeout = 45 * time.Minute

// bareMetalOffer converts one bare-metal type row. The boot disk (the
// smallest SATA SSD, Hot Aisle's 480 GB M.2) is DiskGiB; the NVMe drives
// are LocalDisks with their mount paths.
func bareMetalOffer(row BareMetalType) fleet.Offer {
	s := row.Specs
	o := fleet.Offer{Provider: fleet.ProviderHotAisle, Region: Region, InstanceType: instanceType("bm", s.GPUs, s.CPUCores),
		BareMetal: true, CPUArch: "x86", VCPUs: int(s.CPUCores), CPUCores: int(s.CPUCores),
		MemoryGiB: floorGiB(s.RAMCapacity), GPU: offerGPU(s.GPUs), PricePerHour: float64(row.OnDemandPrice) / 100,
		MinimumReservation: time.Duration(row.MinimumReservationMinutes) * time.Minute,
		BillingGranularity: time.Minute, Available: row.Quantity > 0, Quantity: int(row.Quantity),
		TypicalBoot: BareMetalTypicalBoot, ProvisionTimeout: BareMetalProvisionTimeout, ProviderData: s}
	if len(s.CPUs) > 0 {
		o.CPUModel = s.CPUs[0].Model
	}
	var boot uint64
	for _, d := range s.Disks {
		if d.Type != DiskNVMe && (boot == 0 || d.Capacity < boot) {
			boot = d.Capacity
		}
	}
	o.DiskGiB = floorGiB(boot)
	n := 0
	for _, d := range s.Disks {
		if d.Type != DiskNVMe {
			continue
		}
		for range d.Count {
			ld := fleet.LocalDisk{Type: string(d.Type), SizeBytes: d.Capacity}
			if n < len(bareMetalNVMeMounts) {
				ld.MountPath = bareMetalNVMeMounts[n]
			}
			o.LocalDisks = append(o.LocalDisks, ld)
			n++
		}
	}
	if boot == 0 && o.DiskGiB == 0 {
		o.DiskGiB = floorGiB(s.DiskCapacity)
	}
	return o
}

// mergeOffers keeps one offer per instance type: the rows of a type differ
// only in CPU model. The kept row is the one with the most stock (its specs
// are what a create posts); Quantity is the total.
func mergeOffers(offers []fleet.Offer) []fleet.Offer {
	index := map[string]int{}
	var out []fleet.Offer
	for _, o := range offers {
		i, ok := index[o.InstanceType]
		if !ok {
			index[o.InstanceType] = len(out)
			out = append(out, o)
			continue
		}
		total := out[i].Quantity + o.Quantity
		if o.Quantity > out[i].Quantity {
			out[i] = o
		}
		out[i].Quantity = total
		out[i].Available = total > 0
	}
	return out
}
