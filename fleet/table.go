package fleet

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteOffers prints offers as a table, cheapest first (the slice is not
// changed), one or two lines per offer:
//
//	#  PROVIDER                  RESOURCES                              INSTANCE TYPE  PRICE
//	1  hotaisle (us-michigan-1)  cpu=x86:104 mem=2048GB disk=447GB      bm-mi300x-8    $27.12
//	                             gpu=MI300X:192GB:8 nvme=8x15.36TB
//
// Memory and disk are GiB written "GB"; local drives in decimal TB as sold;
// price in USD per hour.
func WriteOffers(w io.Writer, offers []Offer) error {
	sorted := append([]Offer(nil), offers...)
	SortByPrice(sorted)
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, " #\tPROVIDER\tRESOURCES\tINSTANCE TYPE\tPRICE")
	for i, o := range sorted {
		first, second := offerResources(o)
		fmt.Fprintf(tw, " %d\t%s (%s)\t%s\t%s\t$%.2f\n", i+1, o.Provider, o.Region, first, o.InstanceType, o.PricePerHour)
		if second != "" {
			fmt.Fprintf(tw, " \t\t%s\t\t\n", second)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(buf.String()) {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

func offerResources(o Offer) (first, second string) {
	arch := o.CPUArch
	if arch == "" {
		arch = "x86"
	}
	first = fmt.Sprintf("cpu=%s:%d mem=%sGB disk=%sGB", arch, o.VCPUs, num(o.MemoryGiB), num(o.DiskGiB))
	var parts []string
	if o.GPU.Count > 0 {
		parts = append(parts, fmt.Sprintf("gpu=%s:%sGB:%d", o.GPU.Model, num(o.GPU.MemoryGiB), o.GPU.Count))
	}
	parts = append(parts, diskGroups(o.LocalDisks)...)
	return first, strings.Join(parts, " ")
}

// diskGroups renders local drives as "nvme=8x15.36TB", one group per type
// and size, in order of first appearance.
func diskGroups(disks []LocalDisk) []string {
	type group struct {
		key   string
		count int
	}
	var groups []group
	index := map[string]int{}
	for _, d := range disks {
		key := strings.ToLower(strings.ReplaceAll(d.Type, " ", "")) + "=" + decimalSize(d.SizeBytes)
		if i, ok := index[key]; ok {
			groups[i].count++
			continue
		}
		index[key] = len(groups)
		groups = append(groups, group{key: key, count: 1})
	}
	out := make([]string, len(groups))
	for i, g := range groups {
		typ, size, _ := strings.Cut(g.key, "=")
		out[i] = fmt.Sprintf("%s=%dx%s", typ, g.count, size)
	}
	return out
}

func decimalSize(b uint64) string {
	switch {
	case b >= 1e12:
		return strconv.FormatFloat(float64(b)/1e12, 'f', -1, 64) + "TB"
	default:
		return strconv.FormatFloat(float64(b)/1e9, 'f', -1, 64) + "GB"
	}
}

// num prints a size without a fraction when it is whole, else with one decimal.
func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
