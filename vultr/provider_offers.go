package vultr

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// Plan families that can run the host agent (x86, Docker): the allow-list
// dstack uses. GH200 (ARM) and dedicated vdc plans are left out.
var agentPlans = []*regexp.Regexp{
	regexp.MustCompile(`^vbm-\d+c-\d+gb-\d+-(a100|h100|l40|mi300x)-gpu$`),
	regexp.MustCompile(`^vbm-\d+c-\d+gb-amd$`),
	regexp.MustCompile(`^vbm-\d+c-\d+gb(-v\d+)?$`),
	regexp.MustCompile(`^vcg-(a16|a40|l40s|a100|h100|mi300x)-\d+c-\d+g-\d+vram$`),
	regexp.MustCompile(`^vc2-\d+c-\d+gb(-sc1)?$`),
	regexp.MustCompile(`^vhf-\d+c-\d+gb(-sc1)?$`),
	regexp.MustCompile(`^vhp-\d+c-\d+gb-(intel|amd)(-sc1)?$`),
	regexp.MustCompile(`^voc-[cgms]-\d+c-\d+gb-\d+s-amd(-sc1)?$`),
}

// noPrivateNetworking lists plans that cannot join a VPC ("This plan does not
// support private networking."); the API has no field for it.
var noPrivateNetworking = map[string]bool{"vbm-4c-32gb": true}

// metalGPURE reads the GPUs of a bare-metal plan from its id, the only place
// the API states them: "vbm-256c-2048gb-8-mi300x-gpu" is 8 MI300X.
var metalGPURE = regexp.MustCompile(`^vbm-\d+c-\d+gb-(\d+)-([a-z0-9]+)-gpu$`)

// gpuMemoryGiB is the memory of one device, by model.
var gpuMemoryGiB = map[string]float64{"A16": 16, "A40": 48, "A100": 80, "H100": 80, "L40": 48, "L40S": 48, "MI300X": 192}

// Provisioning deadlines: bare metal takes 40 minutes and more; 55 minutes
// keeps a stuck server under its second billed hour, image pull included.
const (
	BareMetalProvisionTimeout = 55 * time.Minute
	VMProvisionTimeout        = 20 * time.Minute
)

// Typical times: a VM is active after about 2 minutes, bare metal after
// about 40; a server refuses deletes while pending ("not currently
// active") and for 5 minutes after it becomes active ("Server is currently
// locked").
const (
	VMTypicalBoot        = 2 * time.Minute
	BareMetalTypicalBoot = 40 * time.Minute
	DeleteLock           = 5 * time.Minute
)

func agentCapable(plan string) bool {
	for _, re := range agentPlans {
		if re.MatchString(plan) {
			return true
		}
	}
	return false
}

func gpuVendor(model string) string {
	if strings.HasPrefix(model, "MI") {
		return "AMD"
	}
	return "NVIDIA"
}

// cloudGPU reads a vcg plan: the model is gpu_type after "_"; the count is
// gpu_vram_gb over one device's memory, at least 1, so a fractional plan is
// one GPU with its share of the memory.
func cloudGPU(p Plan) fleet.GPU {
	_, model, ok := strings.Cut(p.GPUType, "_")
	if !ok {
		model = p.GPUType
	}
	model = strings.ToUpper(model)
	per := gpuMemoryGiB[model]
	count := 1
	if per > 0 && float64(p.GPUVRAMGB) >= per {
		count = int(float64(p.GPUVRAMGB) / per)
	}
	return fleet.GPU{Vendor: gpuVendor(model), Model: model, Count: count, MemoryGiB: float64(p.GPUVRAMGB) / float64(count)}
}

func metalGPU(id string) fleet.GPU {
	m := metalGPURE.FindStringSubmatch(id)
	if m == nil {
		return fleet.GPU{}
	}
	count, _ := strconv.Atoi(m[1])
	model := strings.ToUpper(m[2])
	if model == "L40" {
		model = "L40S"
	}
	return fleet.GPU{Vendor: gpuVendor(model), Model: model, Count: count, MemoryGiB: gpuMemoryGiB[model]}
}

// planOffer converts a VM plan for one region. Units: ram MB → GiB, disk GB,
// price hourly_cost USD per started hour, monthly_cost the USD a calendar
// month costs at most (MonthlyCap: 730 h of a Cloud GPU, 672 h otherwise).
func planOffer(p Plan, region string, available bool) fleet.Offer {
	o := fleet.Offer{Provider: fleet.ProviderVultr, Region: region, InstanceType: p.ID, CPUArch: "x86",
		VCPUs: p.VCPUCount, MemoryGiB: float64(p.RAM) / 1024, DiskGiB: float64(p.Disk),
		PricePerHour: p.HourlyCost, MonthlyCap: p.MonthlyCost, MinimumReservation: time.Hour, BillingGranularity: time.Hour,
		Available: available, Quantity: -1, SupportsVPC: !noPrivateNetworking[p.ID], ProvisionTimeout: VMProvisionTimeout,
		TypicalBoot: VMTypicalBoot, DeleteLock: DeleteLock, DeleteNeedsRunning: true}
	if p.Type == "vcg" || p.GPUType != "" {
		o.GPU = cloudGPU(p)
	}
	return o
}

// metalOffer converts a bare-metal plan for one region: VCPUs are hardware
// threads, CPUCores physical cores; the first disk is the boot disk and the
// others local disks; GPUs come from the plan id. monthly_cost is the
// month's cap (MonthlyCap: 672 h of hourly_cost).
func metalOffer(p MetalPlan, region string, available bool) fleet.Offer {
	o := fleet.Offer{Provider: fleet.ProviderVultr, Region: region, InstanceType: p.ID, BareMetal: true, CPUArch: "x86",
		VCPUs: p.CPUThreads, CPUCores: p.CPUCores, CPUModel: p.CPUModel, MemoryGiB: float64(p.RAM) / 1024,
		DiskGiB: float64(p.Disk), GPU: metalGPU(p.ID), PricePerHour: p.HourlyCost, MonthlyCap: p.MonthlyCost,
		MinimumReservation: time.Hour, BillingGranularity: time.Hour, Available: available, Quantity: -1,
		SupportsVPC: !noPrivateNetworking[p.ID], ProvisionTimeout: BareMetalProvisionTimeout, SlowProvisioning: true,
		TypicalBoot: BareMetalTypicalBoot, DeleteLock: DeleteLock, DeleteNeedsRunning: true}
	if o.VCPUs == 0 {
		o.VCPUs = p.CPUCount
	}
	for i := 1; i < p.DiskCount; i++ {
		o.LocalDisks = append(o.LocalDisks, fleet.LocalDisk{Type: p.Type, SizeBytes: uint64(p.Disk) * 1e9})
	}
	return o
}
