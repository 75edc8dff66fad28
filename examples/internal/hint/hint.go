// Package hint turns an empty offer list into advice for the example
// programs: which name given on the command line no offer has, with the
// nearest known names, or which single filter to drop to get offers.
package hint

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gpufleet/gpufleet/fleet"
)

// Nearest returns up to n of known closest to word by edit distance (case
// ignored), closest first, ties in alphabetical order.
func Nearest(word string, known []string, n int) []string {
	type scored struct {
		s string
		d int
	}
	var all []scored
	for _, k := range known {
		all = append(all, scored{k, distance(strings.ToLower(word), strings.ToLower(k))})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].d != all[j].d {
			return all[i].d < all[j].d
		}
		return all[i].s < all[j].s
	})
	var out []string
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.s)
	}
	return out
}

// distance is the edit distance of a and b in bytes, a swap of two
// neighbours counting as one edit (a common typo: "odr" for "ord").
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// Unknown returns an error naming the first region, instance type, GPU
// vendor or GPU model of r that no offer in all has, with the three nearest
// that some offer has: `unknown Vultr plan "nope"; nearest: a, b, c`. all
// are the offers of the providers r selects, sold-out ones included.
func Unknown(r fleet.Requirements, all []fleet.Offer) error {
	cloud := cloudOf(r)
	checks := []struct {
		what   string
		values []string
		of     func(fleet.Offer) string
		fold   bool
	}{
		{cloud + "region", r.Regions, func(o fleet.Offer) string { return o.Region }, false},
		{cloud + planWord(cloud), r.InstanceTypes, func(o fleet.Offer) string { return o.InstanceType }, false},
		{"GPU vendor", nonEmpty(r.GPUVendor), func(o fleet.Offer) string { return o.GPU.Vendor }, true},
		{"GPU model", nonEmpty(r.GPUModel), func(o fleet.Offer) string { return o.GPU.Model }, true},
	}
	for _, c := range checks {
		var known []string
		for _, o := range all {
			if v := c.of(o); v != "" && !slices.Contains(known, v) {
				known = append(known, v)
			}
		}
		for _, v := range c.values {
			if !slices.ContainsFunc(known, func(k string) bool { return k == v || c.fold && strings.EqualFold(k, v) }) {
				return fmt.Errorf("unknown %s %q; nearest: %s", c.what, v, strings.Join(Nearest(v, known, 3), ", "))
			}
		}
	}
	return nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// cloudOf is "Vultr " or "Hot Aisle " when r selects one provider, else "".
func cloudOf(r fleet.Requirements) string {
	names := map[string]string{fleet.ProviderVultr: "Vultr ", fleet.ProviderHotAisle: "Hot Aisle "}
	if len(r.Providers) == 1 {
		return names[strings.ToLower(r.Providers[0])]
	}
	return ""
}

// planWord is what the provider named by cloud calls an instance type.
func planWord(cloud string) string {
	if cloud == "Vultr " {
		return "plan"
	}
	return "instance type"
}

// Relaxation is one filter that, dropped alone, lets offers match.
type Relaxation struct {
	Flag    string   // the offers program's flag ("max-price")
	What    string   // in words ("the price limit")
	Matches int      // offers that match without it
	Types   []string // up to three instance types among them: nearest the one asked for when it is the type that is dropped, else cheapest first
}

// Relax returns the filters of r that, each dropped alone, let some of all
// match, most matches first.
func Relax(r fleet.Requirements, all []fleet.Offer) []Relaxation {
	filters := []struct {
		flag, what string
		set        bool
		drop       func(*fleet.Requirements)
	}{
		{"region", "the region", len(r.Regions) > 0, func(r *fleet.Requirements) { r.Regions = nil }},
		{"", "the instance type", len(r.InstanceTypes) > 0, func(r *fleet.Requirements) { r.InstanceTypes = nil }},
		{"vendor", "the GPU vendor", r.GPUVendor != "", func(r *fleet.Requirements) { r.GPUVendor = "" }},
		{"gpu", "the GPU model", r.GPUModel != "", func(r *fleet.Requirements) { r.GPUModel = "" }},
		{"count", "the GPU count", r.GPUCount > 0, func(r *fleet.Requirements) { r.GPUCount = 0 }},
		{"max-price", "the price limit", r.MaxPricePerHour > 0, func(r *fleet.Requirements) { r.MaxPricePerHour = 0 }},
		{"bare-metal", "the bare-metal choice", r.BareMetal != fleet.Any, func(r *fleet.Requirements) { r.BareMetal = fleet.Any }},
		{"", "a VPC (private networking)", r.Cluster, func(r *fleet.Requirements) { r.Cluster = false }},
		{"all", "hiding sold-out offers", !r.IncludeSoldOut, func(r *fleet.Requirements) { r.IncludeSoldOut = true }},
	}
	var out []Relaxation
	for _, f := range filters {
		if !f.set {
			continue
		}
		rr := r
		f.drop(&rr)
		if m := fleet.Filter(all, rr); len(m) > 0 {
			types := someTypes(m, 3)
			if len(rr.InstanceTypes) == 0 && len(r.InstanceTypes) > 0 { // the type was dropped: those nearest the one asked for
				types = nearestPlans(r.InstanceTypes[0], someTypes(m, len(m)), 3)
			}
			out = append(out, Relaxation{Flag: f.flag, What: f.what, Matches: len(m), Types: types})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Matches > out[j].Matches })
	return out
}

// someTypes returns up to n distinct instance types of offers, cheapest
// first.
func someTypes(offers []fleet.Offer, n int) []string {
	offers = slices.Clone(offers)
	fleet.SortByPrice(offers)
	var out []string
	for _, o := range offers {
		if len(out) < n && !slices.Contains(out, o.InstanceType) {
			out = append(out, o.InstanceType)
		}
	}
	return out
}

// nearestPlans is Nearest, plans of the same family as want ("vbm" in
// "vbm-4c-32gb") first.
func nearestPlans(want string, known []string, n int) []string {
	family := func(p string) string { f, _, _ := strings.Cut(p, "-"); return f }
	var same, other []string
	for _, k := range known {
		if family(k) == family(want) {
			same = append(same, k)
		} else {
			other = append(other, k)
		}
	}
	out := Nearest(want, same, n)
	return append(out, Nearest(want, other, n-len(out))...)
}
