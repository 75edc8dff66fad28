package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrInvalidSpec is the class of every error Apply returns for a spec that
// can never be met: a malformed field, MinNodes over Nodes, or a GPU
// model, region, instance type or provider no catalog knows.
var ErrInvalidSpec = errors.New("gpufleet: invalid fleet spec")

// ErrInvalidConfig is the class of every error NewManager returns for a
// Config that cannot work: no providers, a nil or repeated provider, a nil
// pointer Store or Clock, an invalid owner, a negative interval, a Policy
// field out of its range (a negative duration or count, HourlyReleaseMargin
// or CalmHourlyReleaseMargin of 30 minutes or more or under 10 seconds
// (0 is the default), MinuteReleaseMargin of
// 15 minutes or more, RebuySpares without RebuyHold, an unknown release or
// stop policy), ReplicaID without a LeaseStore and an Owner. A Store that
// cannot be read, or that another owner's Manager wrote, is not one of
// them.
var ErrInvalidConfig = errors.New("gpufleet: invalid Manager config")

// refusalError is a refusal of a caller's input: its own text, and
// errors.Is its class (ErrInvalidSpec, ErrInvalidConfig).
type refusalError struct{ err, class error }

func (e *refusalError) Error() string        { return e.err.Error() }
func (e *refusalError) Unwrap() error        { return e.err }
func (e *refusalError) Is(target error) bool { return target == e.class }

func invalidSpec(err error) error {
	if err == nil {
		return nil
	}
	return &refusalError{err: err, class: ErrInvalidSpec}
}

func invalidConfig(err error) error {
	if err == nil {
		return nil
	}
	return &refusalError{err: err, class: ErrInvalidConfig}
}

// checkKnown refuses requirements that name a value no offer of the
// providers the fleet may use has: an unknown GPU model or vendor, region
// or instance type (sold-out offers count as known). The message names
// the value and the nearest known ones. When some provider's catalog
// cannot be read, nothing is refused (it might know the value).
func (m *Manager) checkKnown(ctx context.Context, s Spec) error {
	r := s.Requirements
	if r.GPUModel == "" && r.GPUVendor == "" && len(r.Regions) == 0 && len(r.InstanceTypes) == 0 {
		return nil
	}
	offers, err := m.catalog.Offers(ctx, Requirements{Providers: r.Providers, IncludeSoldOut: true})
	if err != nil {
		return nil
	}
	var models, vendors, regions, types []string
	for _, o := range offers {
		models, vendors = append(models, o.GPU.Model), append(vendors, o.GPU.Vendor)
		regions, types = append(regions, o.Region), append(types, o.InstanceType)
	}
	check := func(what, v string, known []string, fold bool) error {
		if v == "" || slices.ContainsFunc(known, func(k string) bool { return k == v || (fold && strings.EqualFold(k, v)) }) {
			return nil
		}
		return fmt.Errorf("gpufleet: fleet %s: no offer has %s %q (nearest: %s)", s.Name, what, v, strings.Join(nearest(v, known, 3), ", "))
	}
	errs := []error{check("GPU model", r.GPUModel, models, true), check("GPU vendor", r.GPUVendor, vendors, true)}
	for _, v := range r.Regions {
		errs = append(errs, check("region", v, regions, false))
	}
	for _, v := range r.InstanceTypes {
		errs = append(errs, check("instance type", v, types, false))
	}
	return errors.Join(errs...)
}

// nearest returns up to n distinct known values closest to v by edit
// distance (case-insensitive), closest first.
func nearest(v string, known []string, n int) []string {
	uniq := slices.Compact(slices.Sorted(slices.Values(known)))
	uniq = slices.DeleteFunc(uniq, func(s string) bool { return s == "" })
	slices.SortStableFunc(uniq, func(a, b string) int {
		return editDistance(strings.ToLower(v), strings.ToLower(a)) - editDistance(strings.ToLower(v), strings.ToLower(b))
	})
	return uniq[:min(n, len(uniq))]
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// whyNoMatch names the requirements no offer meets on its own (or, when
// each is met by some offer, says only their combination fails).
func whyNoMatch(all []Offer, r Requirements) string {
	if len(all) == 0 {
		return "no offers listed"
	}
	one := func(keep func(*Requirements)) Requirements {
		x := Requirements{Providers: r.Providers, IncludeSoldOut: true}
		keep(&x)
		return x
	}
	checks := []struct {
		name string
		r    Requirements
	}{
		{"region", one(func(x *Requirements) { x.Regions = r.Regions })},
		{"instance type", one(func(x *Requirements) { x.InstanceTypes = r.InstanceTypes })},
		{"GPU", one(func(x *Requirements) {
			x.GPUVendor, x.GPUModel, x.GPUCount, x.MinGPUMemoryGiB = r.GPUVendor, r.GPUModel, r.GPUCount, r.MinGPUMemoryGiB
		})},
		{"CPU, memory or disk", one(func(x *Requirements) {
			x.MinVCPUs, x.MinMemoryGiB, x.MinDiskGiB = r.MinVCPUs, r.MinMemoryGiB, r.MinDiskGiB
		})},
		{"bare metal", one(func(x *Requirements) { x.BareMetal = r.BareMetal })},
		{"price", one(func(x *Requirements) { x.MaxPricePerHour = r.MaxPricePerHour })},
		{"private networking", one(func(x *Requirements) { x.Cluster = r.Cluster })},
	}
	var failed []string
	for _, c := range checks {
		if len(Filter(all, c.r)) == 0 {
			failed = append(failed, c.name)
		}
	}
	switch {
	case len(failed) > 0:
		return "none meets the " + strings.Join(failed, ", ") + " requirement"
	case !r.IncludeSoldOut && len(Filter(all, Requirements{Providers: r.Providers})) == 0:
		return "all sold out"
	}
	return "each requirement is met by some offer, but not all together, or the matching ones are sold out"
}
