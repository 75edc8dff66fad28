package doccheck

import (
	"regexp"
	"strings"
	"unicode"
)

// Abbreviations a reader of this module is expected to know; any other
// (two or more capitals, optionally a plural s) must be explained in the
// same comment: written next to its expansion in parentheses, "dstack
// server (DS)" or "DS (dstack server)".
var knownAbbreviations = words(`
	API APIs HTTP HTTPS URL URLs JSON TCP UDP IP IPs IPv4 IPv6 DNS TLS SSH SHA
	CPU CPUs GPU GPUs VRAM RAM NVMe SSD SATA OS ID IDs UUID UUIDs
	VM VMs VPC VPCs CIDR MAC NIC USD US GB GiB MB MiB TB KB
	GET POST PUT PATCH DELETE HEAD OK EOF PID
	AMD NVIDIA UTC RFC ISO CI SDK CLI TTL UI HTML YAML UTF POSIX
	README SIGINT SIGTERM SIGKILL ECONNREFUSED ETIMEDOUT SYN DIMM DIMMs LTS`)

// emphasis are English words that godoc writes in capitals for emphasis
// ("prices in CENTS") or as placeholders of a format ("METHOD PATH:
// STATUS"): not abbreviations.
var emphasis = words(`
	ALL ANY ARRAY BYTES CENTS HOUR MESSAGE METHOD NEVER NO NOT ONE ONLY
	PATH PER PRIVATE PROCESSOR STATUS`)

// unexplained are abbreviations met in this project's notes that must
// never stand alone in godoc: the names of sources and documents only the
// authors know. They cannot be added to knownAbbreviations.
var unexplained = words(`DS TF ANS GV GH SPEC DOCS WEB`)

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// known reports whether w, or its singular, may be used unexplained.
func known(w string) bool {
	for _, v := range []string{w, strings.TrimSuffix(w, "s")} {
		if knownAbbreviations[v] && !unexplained[v] {
			return true
		}
	}
	return false
}

var (
	tokenRE = regexp.MustCompile(`[A-Za-z0-9_]+`)
	// headerRE matches hyphenated names such as HTTP headers (CF-Ray,
	// X-Request-Id): names, not abbreviations.
	headerRE = regexp.MustCompile(`\b[A-Z][A-Za-z]*(?:-[A-Z][A-Za-z]*)+\b`)
)

// abbreviations reports capitalised abbreviations that are neither known
// nor explained in the comment s.
func (c *checker) abbreviations(where, s string) {
	seen := map[string]bool{}
	for _, w := range tokenRE.FindAllString(headerRE.ReplaceAllString(s, ""), -1) {
		if seen[w] || !isAbbreviation(w) {
			continue
		}
		seen[w] = true
		if known(w) || emphasis[w] || c.exported[w] || explained(w, s) {
			continue
		}
		c.add(where, "abbreviation", w)
	}
}

// isAbbreviation: two or more capitals and no other lower-case letter than
// a final plural s; no underscore (environment variables, API field names),
// no digit (models such as MI300X, H100), not one letter repeated (the
// YYYY-MM-DD of a date format).
func isAbbreviation(w string) bool {
	if strings.ContainsAny(w, "_0123456789") || strings.Count(w, w[:1]) == len(w) {
		return false
	}
	w = strings.TrimSuffix(w, "s")
	caps := 0
	for _, r := range w {
		if unicode.IsLower(r) {
			return false
		}
		caps++
	}
	return caps >= 2
}

// explained reports whether s spells w out where it uses it: "dstack
// server (DS)", or "DS (dstack server)". An expansion spells w when one of
// its words starts with w's first letter and w's other letters follow in
// order ("Terraform (TF)" does; "instance-id. (DS)" does not).
func explained(w, s string) bool {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(w)
		i = end
		switch {
		case start > 0 && s[start-1] == '(' && end < len(s) && s[end] == ')':
			if spells(lastWords(s[:start-1], len(w)+3), w) {
				return true
			}
		case strings.HasPrefix(s[end:], " ("):
			if k := strings.IndexByte(s[end:], ')'); k > 0 && spells(s[end+2:end+k], w) {
				return true
			}
		}
	}
	return false
}

// lastWords returns the last n words of s.
func lastWords(s string, n int) string {
	f := strings.Fields(s)
	return strings.Join(f[max(len(f)-n, 0):], " ")
}

// spells reports whether a word of text starts with abbr's first letter and
// the rest of abbr's letters follow it, in order, case ignored.
func spells(text, abbr string) bool {
	text, abbr = strings.ToLower(text), strings.ToLower(strings.TrimSuffix(abbr, "s"))
	for i, r := range text {
		if r != rune(abbr[0]) || (i > 0 && unicode.IsLetter(rune(text[i-1]))) {
			continue
		}
		rest := abbr[1:]
		for _, r := range text[i+1:] {
			if len(rest) > 0 && r == rune(rest[0]) {
				rest = rest[1:]
			}
		}
		if rest == "" {
			return true
		}
	}
	return false
}
