package vultr

import (
	"context"
	"iter"
	"net/url"
)

// Plan is a VM plan of GET /v2/plans (vc2, vhf, vhp, voc, vdc, vcg...).
// Units are the API's: RAM in MB, Disk in GB, Bandwidth in GB per month,
// costs in USD. Vultr bills whole hours (1 h minimum) at HourlyCost, at most
// MonthlyCost per calendar month (730 h of a Cloud GPU, 672 h otherwise).
type Plan struct {
	ID          string   `json:"id"`           // e.g. "vcg-a100-3c-30g-20vram"
	VCPUCount   int      `json:"vcpu_count"`   // virtual CPUs
	RAM         int      `json:"ram"`          // MB
	Disk        int      `json:"disk"`         // GB per disk
	DiskCount   int      `json:"disk_count"`   // number of disks
	Bandwidth   int      `json:"bandwidth"`    // GB per month
	MonthlyCost float64  `json:"monthly_cost"` // USD per month (capped hours)
	HourlyCost  float64  `json:"hourly_cost"`  // USD per started hour
	Type        string   `json:"type"`         // plan family: "vc2", "vcg", ...
	Locations   []string `json:"locations"`    // region ids that sell it
	GPUVRAMGB   int      `json:"gpu_vram_gb"`  // Cloud GPU only: GPU memory in GB (all GPUs)
	GPUType     string   `json:"gpu_type"`     // Cloud GPU only: e.g. "NVIDIA_A100"
	Name        string   `json:"name"`         // legacy; usually absent
}

// MetalPlan is a bare-metal plan of GET /v2/plans-metal. RAM in MB, Disk in
// GB per disk, costs in USD. It has no GPU fields: GPU model and count are
// only in the id ("vbm-256c-2048gb-8-mi300x-gpu").
type MetalPlan struct {
	ID                     string   `json:"id"`
	PhysicalCPUs           int      `json:"physical_cpus"` // sockets
	CPUCount               int      `json:"cpu_count"`     // cores as the API counts them
	CPUCores               int      `json:"cpu_cores"`
	CPUThreads             int      `json:"cpu_threads"`
	CPUModel               string   `json:"cpu_model"`
	CPUMHz                 int      `json:"cpu_mhz"`
	RAM                    int      `json:"ram"`  // MB
	Disk                   FlexInt  `json:"disk"` // GB per disk (a string in some spec versions)
	DiskCount              int      `json:"disk_count"`
	Bandwidth              int      `json:"bandwidth"`    // GB per month
	MonthlyCost            float64  `json:"monthly_cost"` // USD per month (capped hours: 672)
	HourlyCost             float64  `json:"hourly_cost"`  // USD per started hour
	MonthlyCostPreemptible float64  `json:"monthly_cost_preemptible"`
	HourlyCostPreemptible  float64  `json:"hourly_cost_preemptible"`
	Type                   string   `json:"type"` // disk kind: "SSD", "NVMe"
	Locations              []string `json:"locations"`
}

// PlanListOptions filters GET /v2/plans.
type PlanListOptions struct {
	// Type is a plan family: "all", "vc2", "vdc", "vhf", "vhp", "voc",
	// "voc-g", "voc-c", "voc-m", "voc-s", "vcg"; "" means the API default.
	Type string
	// OS is "windows" to list plans that can run Windows; "" for all.
	OS string
}

type plansPage struct {
	Plans *[]Plan `json:"plans"`
	Meta  *Meta   `json:"meta"`
}

func (p *plansPage) items() ([]Plan, error) {
	return pageItems(p.Plans, "plans", func(v *Plan) string { return v.ID })
}

func (p *plansPage) meta() *Meta { return p.Meta }

type metalPlansPage struct {
	Plans *[]MetalPlan `json:"plans_metal"`
	Meta  *Meta        `json:"meta"`
}

func (p *metalPlansPage) items() ([]MetalPlan, error) {
	return pageItems(p.Plans, "plans_metal", func(v *MetalPlan) string { return v.ID })
}

func (p *metalPlansPage) meta() *Meta { return p.Meta }

// ListPlans iterates over GET /v2/plans (public: no key needed), all pages.
// opts may be nil.
func (c *Client) ListPlans(ctx context.Context, opts *PlanListOptions) iter.Seq2[Plan, error] {
	q := url.Values{}
	if opts != nil {
		setIf(q, "type", opts.Type)
		setIf(q, "os", opts.OS)
	}
	return list[Plan, *plansPage](ctx, c, "/v2/plans", q)
}

// ListMetalPlans iterates over GET /v2/plans-metal (public), all pages.
func (c *Client) ListMetalPlans(ctx context.Context) iter.Seq2[MetalPlan, error] {
	return list[MetalPlan, *metalPlansPage](ctx, c, "/v2/plans-metal", nil)
}

// setIf sets q[k] = v when v is not empty.
func setIf(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}
