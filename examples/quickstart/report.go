package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
)

// report is what the run ends with.
type report struct {
	real                bool
	cloud, wall         time.Duration
	created, terminated int
	calls               []callCount
	faults              []faultCount
	deferred            map[string]int         // provider → releases held for a reservation window (not forced)
	forced              map[string]forcedEarly // provider → releases forced before the minimum ended
	charges             []charge
	optimum             map[string]float64 // provider ("" for all) → offline optimum in USD
	optimumProven       bool
	leaked              []string
	errs                []string
}

// callCount is the API calls made to one provider.
type callCount struct {
	provider string
	total    int
	refused  map[int]int // HTTP status → answers (sim only)
}

// faultCount is one kind of refusal met, per provider.
type faultCount struct {
	provider, name string
	count          int
	sentence       string // what happened and what the Manager did
}

// ok reports a clean run: nothing leaked, nothing failed.
func (r *report) ok() bool { return len(r.leaked) == 0 && len(r.errs) == 0 }

// fault returns how often a fault was met (0 when never).
func (r *report) fault(provider, name string) int {
	for _, f := range r.faults {
		if f.provider == provider && f.name == name {
			return f.count
		}
	}
	return 0
}

// bill returns the charged and least possible totals of a provider ("" for
// all), summed exactly (see micros).
func (r *report) bill(provider string) (charged, least float64) {
	c, l := r.billMicros(provider)
	return c.usd(), l.usd()
}

// billMicros is bill in micros: the figures the report prints.
func (r *report) billMicros(provider string) (charged, least micros) {
	for _, c := range r.charges {
		if provider == "" || c.provider == provider {
			charged += toMicros(c.usd)
			least += toMicros(c.least)
		}
	}
	return charged, least
}

// report gathers the numbers once every fleet is gone (or the teardown gave up).
func (d *driver) report() *report {
	r := &report{real: d.cfg.real, cloud: d.w.clock.Now().Sub(d.start), wall: time.Since(d.wallStart)}
	d.mu.Lock()
	events := slices.Clone(d.events)
	r.errs = slices.Clone(d.errs)
	d.mu.Unlock()
	ev := evidence{events: events, m: d.w.meter}
	for _, p := range d.w.providers {
		name := p.Name()
		for _, f := range faults {
			refused := d.w.meter.refusalsOf(name, f.name)
			n, o := len(refused), ev.outcome(f, refused)
			sentence := f.say(n, o)
			if f.class == fleet.ErrMinReservation && name == fleet.ProviderHotAisle {
				forced := ev.forcedAfterHold(name)
				held := heldOf(events, name) // forced ones too
				sentence = minimumSentence(n, held, forced, o)
				n += held
			}
			if n > 0 {
				r.faults = append(r.faults, faultCount{provider: name, name: f.name, count: n, sentence: sentence})
			}
		}
	}
	if d.w.sims != nil {
		r.calls = []callCount{simCalls(fleet.ProviderVultr, d.w.sims.vultr.Calls()), simCalls(fleet.ProviderHotAisle, d.w.sims.hot.Calls())}
		r.charges = d.simCharges()
		r.created, r.terminated, r.leaked = simInventory(d.w.sims)
	} else {
		for _, p := range d.w.meter.providers() {
			r.calls = append(r.calls, callCount{provider: p, total: d.w.meter.callsTo(p)})
		}
		r.charges = d.estimatedCharges()
		r.created, r.terminated, r.leaked = d.realLeftovers()
	}
	r.deferred, r.forced = releasesOf(events, r.charges)
	r.optimum, r.optimumProven = d.offlineOptimum(r.charges)
	return r
}

// minimumSentence says how Hot Aisle's minimum reservation was met:
// releases held until it ended (the Manager's default), those of them
// forced before it ended after all (a teardown), and releases the cloud
// refused before it ended, retried (o: what became of their servers).
func minimumSentence(refused, held, forced int, o outcome) string {
	var parts []string
	if waited := held - forced; waited > 0 {
		parts = append(parts, count(waited, "release", "releases")+" waited for the end of the minimum reservation (paid anyway)")
	}
	if forced > 0 {
		verb := "were"
		if forced == 1 {
			verb = "was"
		}
		parts = append(parts, fmt.Sprintf("%s held for the minimum %s forced before it ended (the rest of it paid anyway)", count(forced, "release", "releases"), verb))
	}
	if refused > 0 {
		head := count(refused, "was", "were") + " refused before it ended, and retried"
		if len(parts) == 0 {
			head = count(refused, "release was", "releases were") + " refused before the minimum reservation ended, and retried"
		}
		parts = append(parts, strings.TrimSuffix(o.tell(head, head+": ", "%s confirmed gone", "%s given up", "%s never confirmed gone"), "."))
	}
	return strings.Join(parts, "; ") + "."
}

func simCalls(provider string, calls []sim.Call) callCount {
	c := callCount{provider: provider, total: len(calls), refused: map[int]int{}}
	for _, call := range calls {
		if call.Status < 200 || call.Status > 299 {
			c.refused[call.Status]++
		}
	}
	return c
}

// simInventory counts the fakes' servers and lists what is still live:
// servers and VPCs (SSH keys are free and not counted).
func simInventory(s *sims) (created, terminated int, leaked []string) {
	for _, res := range append(s.vultr.Resources(), s.hot.Resources()...) {
		if res.Kind == "ssh_key" {
			continue
		}
		if res.Kind != "vpc" {
			created++
			if !res.Live() {
				terminated++
			}
		}
		if res.Live() {
			leaked = append(leaked, fmt.Sprintf("%s %s %s %s (%s)", res.Kind, res.ID, res.Plan, res.Region, res.State))
		}
	}
	return created, terminated, leaked
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n=== report ===\n")
	fmt.Fprintf(w, "cloud time %s in %s of wall time\n", hms(r.cloud), r.wall.Round(10*time.Millisecond))
	fmt.Fprintf(w, "instances: %d created, %d terminated\n", r.created, r.terminated)
	fmt.Fprintln(w, "API calls:")
	for _, c := range r.calls {
		fmt.Fprintf(w, "  %-9s %5d%s\n", c.provider, c.total, refusedText(c.refused))
	}
	verdict := "met and survived"
	if len(r.leaked) > 0 {
		verdict = "met (NOT all survived: see leaked)"
	}
	fmt.Fprintf(w, "faults %s:\n", verdict)
	if len(r.faults) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, f := range r.faults {
		fmt.Fprintf(w, "  %-9s %s\n", f.provider, f.sentence)
	}
	r.printBill(w)
	for _, e := range r.errs {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	fmt.Fprintf(w, "leaked: %d\n", len(r.leaked))
	for _, l := range r.leaked {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

func refusedText(refused map[int]int) string {
	if len(refused) == 0 {
		return ""
	}
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(refused)) {
		label := fmt.Sprint(st)
		if st == 0 {
			label = "reset"
		}
		parts = append(parts, fmt.Sprintf("%s x%d", label, refused[st]))
	}
	return "  (refused: " + strings.Join(parts, ", ") + ")"
}

func (r *report) printBill(w io.Writer) {
	source := "the sims' ledgers"
	if r.real {
		source = "estimated from the Manager's records by each cloud's billing rule"
	}
	fmt.Fprintf(w, "bill in USD (%s) beside the least each instance could cost (billed from its create to the end of its work or minimum):\n", source)
	const format = "  %-9s %s %-28s %6s %8s %15s  %s"
	row := func(provider, id string, args ...any) {
		line := fmt.Sprintf(format, append([]any{provider, padRight(id, 28)}, args...)...)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	row("PROVIDER", "REQUEST → INSTANCE", "PLAN", "BILLED", "CHARGED", "LEAST FOR IT", "")
	for _, c := range r.charges {
		live := ""
		if c.live {
			live = "still billing"
		}
		id := short(c.id)
		if c.request != "" {
			id = c.request + " → " + id
		}
		row(c.provider, id, c.plan, billedText(c.billed), usd(c.usd), usd(c.least), live)
	}
	for _, p := range append(providersOf(r.charges), "") {
		charged, least := r.billMicros(p)
		row(providerName(p), "total", "", "", charged.String(), least.String(), over(charged.usd(), least.usd()))
	}
	if r.rounded() {
		fmt.Fprintln(w, "  (rows are rounded to the cent; totals add the unrounded charges)")
	}
	r.printOptimum(w)
	r.printReleases(w)
}

// printOptimum sets each provider's bill beside the offline optimum for
// the same jobs, always: with no job run the optimum is 0.00 and the whole
// bill bought no work.
func (r *report) printOptimum(w io.Writer) {
	if r.optimum == nil {
		fmt.Fprintf(w, "%s: not computed (see the errors below)\n", optimumText)
		return
	}
	proven := ""
	if !r.optimumProven {
		proven = " (the best plan found: not proven optimal)"
	}
	fmt.Fprintf(w, "%s%s:\n", optimumText, proven)
	fmt.Fprintf(w, "  %-9s %8s %8s\n", "PROVIDER", "OPTIMUM", "CHARGED")
	for _, p := range append(providersOf(r.charges), "") {
		charged, _ := r.billMicros(p)
		opt := toMicros(r.optimum[p])
		note := over(charged.usd(), opt.usd())
		if opt == 0 && charged > 0 {
			note = "no job ran"
		}
		line := fmt.Sprintf("  %-9s %8s %8s  %s", providerName(p), opt, charged, note)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	if r.optimumRounded() {
		fmt.Fprintln(w, `  (rounded to the cent; "all" adds the unrounded amounts)`)
	}
}

// rounded reports whether a total of the bill differs from the sum of its
// rows as printed: a provider's from its instances', and all's from the
// instances' or the providers', in either column.
func (r *report) rounded() bool {
	var allRows, provRows [2]int64
	for _, p := range providersOf(r.charges) {
		var rows [2]int64
		for _, c := range r.charges {
			if c.provider == p {
				rows[0] += toMicros(c.usd).cents()
				rows[1] += toMicros(c.least).cents()
			}
		}
		charged, least := r.billMicros(p)
		total := [2]int64{charged.cents(), least.cents()}
		if rows != total {
			return true
		}
		for i := range 2 {
			allRows[i] += rows[i]
			provRows[i] += total[i]
		}
	}
	charged, least := r.billMicros("")
	all := [2]int64{charged.cents(), least.cents()}
	return allRows != all || provRows != all
}

// optimumRounded reports whether the optimum table's "all" row differs
// from the sum of the provider rows as printed.
func (r *report) optimumRounded() bool {
	var opt, charged int64
	for _, p := range providersOf(r.charges) {
		c, _ := r.billMicros(p)
		opt += toMicros(r.optimum[p]).cents()
		charged += c.cents()
	}
	c, _ := r.billMicros("")
	return opt != toMicros(r.optimum[""]).cents() || charged != c.cents()
}

// providerName names a provider in a table ("" is "all").
func providerName(p string) string {
	if p == "" {
		return "all"
	}
	return p
}

// padRight pads s with spaces to n characters (runes: "→" is one).
func padRight(s string, n int) string {
	return s + strings.Repeat(" ", max(n-utf8.RuneCountInString(s), 0))
}

func providersOf(cs []charge) []string {
	seen := map[string]bool{}
	for _, c := range cs {
		seen[c.provider] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

func over(charged, least float64) string {
	if least == 0 {
		return ""
	}
	pct := (charged/least - 1) * 100
	if math.Abs(pct) < 0.05 {
		pct = 0 // no "-0.0%" from rounding
	}
	return fmt.Sprintf("%+.1f%%", pct)
}

// billedText formats billed time as "1h", "31m" or "8h01m".
func billedText(d time.Duration) string {
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%02dm", h, m)
}

func short(id string) string {
	if len(id) > 13 {
		return id[:8] + "…"
	}
	return id
}
