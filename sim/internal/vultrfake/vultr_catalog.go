package vultrfake

import (
	"fmt"
	"slices"
	"strings"
)

// VultrPlan is a Vultr cloud plan (VM or Cloud GPU) as GET /v2/plans returns
// it (govultr's Plan plus hourly_cost, as gpuhunt reads it).
type VultrPlan struct {
	ID          string   `json:"id"`                    // e.g. "vcg-a100-1c-6g-4vram"
	VCPUCount   int      `json:"vcpu_count"`            // virtual CPUs
	RAM         int      `json:"ram"`                   // MB
	Disk        int      `json:"disk"`                  // GB
	DiskCount   int      `json:"disk_count"`            // disks
	Bandwidth   int      `json:"bandwidth"`             // GB per month
	MonthlyCost float64  `json:"monthly_cost"`          // USD per month (the billing cap)
	HourlyCost  float64  `json:"hourly_cost"`           // USD per started hour
	Type        string   `json:"type"`                  // vc2, vhf, vhp, voc, vcg
	GPUVRAM     int      `json:"gpu_vram_gb,omitempty"` // GB of GPU memory (vcg only)
	GPUType     string   `json:"gpu_type,omitempty"`    // e.g. "NVIDIA_A100" (vcg only)
	Locations   []string `json:"locations"`             // region ids offering the plan
	// NoPrivateNetwork marks a plan that cannot join a VPC (not serialised).
	NoPrivateNetwork bool `json:"-"`
}

// VultrMetalPlan is a Vultr bare-metal plan as GET /v2/plans-metal returns it
// (govultr's BareMetalPlan). GPU count and model appear only in the id.
type VultrMetalPlan struct {
	ID                     string   `json:"id"` // e.g. "vbm-256c-2048gb-8-mi300x-gpu"
	PhysicalCPUs           int      `json:"physical_cpus"`
	CPUCount               int      `json:"cpu_count"` // cores, not threads
	CPUCores               int      `json:"cpu_cores"`
	CPUThreads             int      `json:"cpu_threads"`
	CPUModel               string   `json:"cpu_model"`
	CPUMHz                 int      `json:"cpu_mhz"`
	RAM                    int      `json:"ram"`        // MB
	Disk                   int      `json:"disk"`       // GB per disk
	DiskCount              int      `json:"disk_count"` // disks
	Bandwidth              int      `json:"bandwidth"`  // GB per month
	MonthlyCost            float64  `json:"monthly_cost"`
	HourlyCost             float64  `json:"hourly_cost"`
	MonthlyCostPreemptible float64  `json:"monthly_cost_preemptible"`
	HourlyCostPreemptible  float64  `json:"hourly_cost_preemptible"`
	Type                   string   `json:"type"` // disk type: "SSD", "NVMe"
	Locations              []string `json:"locations"`
	// NoPrivateNetwork marks a plan that cannot join a VPC (not serialised);
	// vbm-4c-32gb in the default catalog.
	NoPrivateNetwork bool `json:"-"`
}

// VultrRegion is a Vultr region as GET /v2/regions returns it.
type VultrRegion struct {
	ID           string   `json:"id"` // e.g. "ewr"
	City         string   `json:"city"`
	Country      string   `json:"country"`
	Continent    string   `json:"continent"`
	Options      []string `json:"options"`
	Connectivity []string `json:"connectivity"`
}

// VultrCatalog is what the Vultr fake sells: plans, bare-metal plans,
// regions, and the plans sold out per region. A plan is available in a region
// when the region is in its Locations and it is not sold out there;
// GET /v2/regions/{id}/availability lists exactly the available plans.
type VultrCatalog struct {
	Plans      []VultrPlan
	MetalPlans []VultrMetalPlan
	Regions    []VultrRegion
	// SoldOut maps a plan id to the regions where it has no capacity.
	SoldOut map[string][]string
}

func (c VultrCatalog) clone() VultrCatalog {
	out := VultrCatalog{Plans: slices.Clone(c.Plans), MetalPlans: slices.Clone(c.MetalPlans),
		Regions: slices.Clone(c.Regions), SoldOut: map[string][]string{}}
	for i := range out.Plans {
		out.Plans[i].Locations = slices.Clone(out.Plans[i].Locations)
	}
	for i := range out.MetalPlans {
		out.MetalPlans[i].Locations = slices.Clone(out.MetalPlans[i].Locations)
	}
	for k, v := range c.SoldOut {
		out.SoldOut[k] = slices.Clone(v)
	}
	return out
}

func (c *VultrCatalog) plan(id string) (VultrPlan, bool) {
	for _, p := range c.Plans {
		if p.ID == id {
			return p, true
		}
	}
	return VultrPlan{}, false
}

func (c *VultrCatalog) metalPlan(id string) (VultrMetalPlan, bool) {
	for _, p := range c.MetalPlans {
		if p.ID == id {
			return p, true
		}
	}
	return VultrMetalPlan{}, false
}

func (c *VultrCatalog) region(id string) (VultrRegion, bool) {
	for _, r := range c.Regions {
		if r.ID == id {
			return r, true
		}
	}
	return VultrRegion{}, false
}

func (c *VultrCatalog) soldOut(plan, region string) bool {
	return slices.Contains(c.SoldOut[plan], region)
}

// available lists the plan ids available in region, VM plans first, filtered
// by a plan type ("" or "all" for every plan; "vbm" for bare metal).
func (c *VultrCatalog) available(region, typ string) []string {
	out := []string{}
	for _, p := range c.Plans {
		if slices.Contains(p.Locations, region) && !c.soldOut(p.ID, region) && vultrPlanTypeMatches(p.ID, p.Type, typ) {
			out = append(out, p.ID)
		}
	}
	for _, p := range c.MetalPlans {
		if slices.Contains(p.Locations, region) && !c.soldOut(p.ID, region) && vultrPlanTypeMatches(p.ID, "vbm", typ) {
			out = append(out, p.ID)
		}
	}
	return out
}

// vultrPlanTypes are the values the type filter of /v2/plans and
// /v2/regions/{id}/availability accepts (SPEC PlansApi, vultr-cli).
var vultrPlanTypes = []string{"", "all", "vc2", "vdc", "vhf", "vhp", "voc", "voc-g", "voc-c", "voc-m", "voc-s", "vcg", "vbm"}

// vultrPlanTypeMatches reports whether a plan of the given id and type passes the
// type filter typ: "voc-g" matches voc plans whose id starts with "voc-g-".
func vultrPlanTypeMatches(id, ptype, typ string) bool {
	switch {
	case typ == "" || typ == "all":
		return true
	case strings.HasPrefix(typ, "voc-"):
		return strings.HasPrefix(id, typ+"-")
	default:
		return ptype == typ
	}
}

// vultrMetalRAM and vultrMetalDisk render a bare-metal plan the way the server object
// shows it: "2097152 MB" and "8x 3576 GB NVMe".
func vultrMetalRAM(p VultrMetalPlan) string { return fmt.Sprintf("%d MB", p.RAM) }

func vultrMetalDisk(p VultrMetalPlan) string {
	return fmt.Sprintf("%dx %d GB %s", p.DiskCount, p.Disk, p.Type)
}
