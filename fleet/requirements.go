package fleet

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Tristate is a yes / no / don't-care choice.
type Tristate int

// Tristate values.
const (
	Any Tristate = iota
	Yes
	No
)

// Requirements select offers. A zero field does not constrain.
type Requirements struct {
	Providers     []string // provider names
	Regions       []string // region ids
	InstanceTypes []string // instance type names

	GPUVendor       string  // "AMD", "NVIDIA" (case-insensitive)
	GPUModel        string  // "MI300X" (case-insensitive)
	GPUCount        int     // exact number of GPUs per instance
	MinGPUMemoryGiB float64 // per GPU
	MinVCPUs        int
	MinMemoryGiB    float64
	MinDiskGiB      float64 // boot disk

	BareMetal       Tristate // Any by default; Yes: bare metal only; No: VMs only
	MaxPricePerHour float64  // USD per hour; 0: no limit
	Cluster         bool     // offers that can join a private network only
	IncludeSoldOut  bool     // keep offers that are not available now
}

// Validate reports a requirement that can never be met, or that means
// nothing: negative numbers, a size or price that is NaN or infinite (a
// NaN cap, from a budget divided by zero hours, would match every offer),
// or an unknown BareMetal value.
func (r Requirements) Validate() error {
	for _, v := range []float64{r.MinGPUMemoryGiB, r.MinMemoryGiB, r.MinDiskGiB, r.MaxPricePerHour} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("gpufleet: requirements: sizes and prices must be numbers, got %v", v)
		}
	}
	switch {
	case r.GPUCount < 0, r.MinGPUMemoryGiB < 0, r.MinVCPUs < 0, r.MinMemoryGiB < 0, r.MinDiskGiB < 0, r.MaxPricePerHour < 0:
		return fmt.Errorf("gpufleet: requirements: counts, sizes and prices must not be negative")
	case r.BareMetal < Any || r.BareMetal > No:
		return fmt.Errorf("gpufleet: requirements: BareMetal must be Any, Yes or No, got %d", r.BareMetal)
	}
	return nil
}

// Match reports whether o satisfies r (provider names compare without case).
func (r Requirements) Match(o Offer) bool {
	switch {
	case len(r.Providers) > 0 && !slices.ContainsFunc(r.Providers, func(p string) bool { return strings.EqualFold(p, o.Provider) }),
		len(r.Regions) > 0 && !slices.Contains(r.Regions, o.Region),
		len(r.InstanceTypes) > 0 && !slices.Contains(r.InstanceTypes, o.InstanceType),
		r.GPUVendor != "" && !strings.EqualFold(r.GPUVendor, o.GPU.Vendor),
		r.GPUModel != "" && !strings.EqualFold(r.GPUModel, o.GPU.Model),
		r.GPUCount > 0 && o.GPU.Count != r.GPUCount,
		o.GPU.MemoryGiB < r.MinGPUMemoryGiB,
		o.VCPUs < r.MinVCPUs,
		o.MemoryGiB < r.MinMemoryGiB,
		o.DiskGiB < r.MinDiskGiB,
		r.BareMetal == Yes && !o.BareMetal,
		r.BareMetal == No && o.BareMetal,
		r.MaxPricePerHour > 0 && o.PricePerHour > r.MaxPricePerHour,
		r.Cluster && !o.SupportsVPC,
		!r.IncludeSoldOut && !o.Available:
		return false
	}
	return true
}

// Filter returns the offers that match r, cheapest first (ties: provider,
// region, instance type), without changing offers.
func Filter(offers []Offer, r Requirements) []Offer {
	out := make([]Offer, 0, len(offers))
	for _, o := range offers {
		if r.Match(o) {
			out = append(out, o)
		}
	}
	SortByPrice(out)
	return out
}

// SortByPrice sorts offers cheapest first, ties broken by provider, region
// and instance type so the order is stable.
func SortByPrice(offers []Offer) {
	sort.SliceStable(offers, func(i, j int) bool {
		a, b := offers[i], offers[j]
		if a.PricePerHour != b.PricePerHour {
			return a.PricePerHour < b.PricePerHour
		}
		return a.Key() < b.Key()
	})
}

// keeps reports whether a member with offer o may serve a fleet that now
// asks for r when the fleet takes it back instead of creating (reclaim):
// Match, except for what says nothing about the machine itself — its price
// (what it costs is paid or known), whether more can be bought now — and
// for the sizes a record read from a listing may not know (zero in o).
func (r Requirements) keeps(o Offer) bool {
	r.MaxPricePerHour, r.IncludeSoldOut, o.Available = 0, true, true
	if o.VCPUs == 0 {
		r.MinVCPUs = 0
	}
	if o.MemoryGiB == 0 {
		r.MinMemoryGiB = 0
	}
	if o.DiskGiB == 0 {
		r.MinDiskGiB = 0
	}
	if o.GPU.MemoryGiB == 0 {
		r.MinGPUMemoryGiB = 0
	}
	if o.GPU.Vendor == "" {
		r.GPUVendor = ""
	}
	if o.GPU.Model == "" {
		r.GPUModel = ""
	}
	if o.GPU.Count == 0 {
		r.GPUCount = 0
	}
	return r.Match(o)
}
