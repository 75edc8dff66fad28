package vultr

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// DiskGroup is one group of identical drives of a bare-metal "disk" string:
// "8x 3576 GB NVMe" is {Count: 8, SizeGB: 3576, Kind: "NVMe"}.
type DiskGroup struct {
	Count  int     // number of drives (1 when the string has no "Nx")
	SizeGB float64 // size of each drive in GB (decimal, as the API writes it)
	Kind   string  // "SSD", "NVMe", ... ("" when absent)
}

var (
	ramRE  = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*(MB|GB|TB)?\s*$`)
	diskRE = regexp.MustCompile(`^\s*(?:([0-9]+)\s*[xX]\s*)?([0-9]+(?:\.[0-9]+)?)\s*((?i:MB|GB|TB))\s*(.*?)\s*$`)
)

// ramMB converts RAM units to MB (binary: the API's 2097152 MB is 2 TiB);
// diskGB converts drive sizes to GB (decimal, as drives are sold).
var (
	ramMB  = map[string]float64{"": 1, "MB": 1, "GB": 1024, "TB": 1024 * 1024}
	diskGB = map[string]float64{"MB": 0.001, "GB": 1, "TB": 1000}
)

// ParseRAM parses a bare-metal "ram" string ("2097152 MB"; a bare number is
// taken as MB; "GB" and "TB" are converted with factors of 1024) into MB.
func ParseRAM(s string) (int, error) {
	m := ramRE.FindStringSubmatch(strings.ToUpper(s))
	if m == nil {
		return 0, fmt.Errorf("vultr: ram %q: want \"<n> MB\"", s)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return int(v * ramMB[m[2]]), nil
}

// ParseDisks parses a bare-metal "disk" string: groups like "2x 240 GB SSD"
// separated by "," or "+" ("2x 480 GB SSD, 8x 3576 GB NVMe"); sizes in
// "TB" or "MB" are converted to GB decimally. "" gives no groups, no error.
func ParseDisks(s string) ([]DiskGroup, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []DiskGroup
	for part := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ',' || r == '+' }) {
		m := diskRE.FindStringSubmatch(part)
		if m == nil {
			return nil, fmt.Errorf("vultr: disk %q: want \"<count>x <size> GB <kind>\"", s)
		}
		g := DiskGroup{Count: 1, Kind: m[4]}
		if m[1] != "" {
			g.Count, _ = strconv.Atoi(m[1])
		}
		size, _ := strconv.ParseFloat(m[2], 64)
		g.SizeGB = size * diskGB[strings.ToUpper(m[3])]
		out = append(out, g)
	}
	return out, nil
}
