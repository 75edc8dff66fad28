package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
)

// report is what the run ends with.
type report struct {
	cloud, wall         time.Duration
	created, terminated int
	calls               []callCount
	held                []string // one line per replica
	victim              string
	stoppedAt, takeover time.Duration // wall; takeover 0: none happened
	ttl                 time.Duration
	bill                []billLine
	leaked              []string
	errs                []string
}

type callCount struct {
	provider string
	total    int
	refused  map[int]int // HTTP status other than 2xx → answers (0: connection reset)
}

type billLine struct {
	provider string
	charges  int
	usd      float64
}

// ok reports a clean run: a takeover, nothing left behind, nothing failed.
func (r *report) ok() bool { return r.takeover > 0 && len(r.leaked) == 0 && len(r.errs) == 0 }

func (d *demo) report() *report {
	r := &report{cloud: d.w.clock.Now().Sub(d.cloud0), wall: time.Since(d.start), victim: d.victim,
		stoppedAt: d.stoppedAt, takeover: d.takeover, ttl: d.cfg.ttl, errs: d.errs}
	r.created, r.terminated, r.leaked = d.w.inventory()
	r.calls = []callCount{countCalls(fleet.ProviderVultr, d.w.v.Calls()), countCalls(fleet.ProviderHotAisle, d.w.h.Calls())}
	for _, side := range []struct {
		provider string
		ledger   sim.Ledger
	}{{fleet.ProviderVultr, d.w.v.Ledger()}, {fleet.ProviderHotAisle, d.w.h.Ledger()}} {
		r.bill = append(r.bill, billLine{provider: side.provider, charges: len(side.ledger.Charges), usd: side.ledger.TotalUSD})
	}
	for _, rep := range d.reps {
		r.held = append(r.held, d.heldText(rep.id))
	}
	return r
}

func countCalls(provider string, calls []sim.Call) callCount {
	c := callCount{provider: provider, total: len(calls), refused: map[int]int{}}
	for _, call := range calls {
		if call.Status < 200 || call.Status > 299 {
			c.refused[call.Status]++
		}
	}
	return c
}

// heldText says, from its FleetTaken and FleetReleased events, which
// fleets a replica held: taken at the start, let go (and why), taken over.
func (d *demo) heldText(id string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var took, over []string
	released := map[string][]string{} // why → fleets
	for _, mv := range d.moves {
		switch {
		case mv.replica != id:
		case !mv.taken:
			released[mv.why] = append(released[mv.why], mv.fleet)
		case d.victim != "" && mv.at > d.stoppedAt:
			over = append(over, mv.fleet)
		default:
			took = append(took, mv.fleet)
		}
	}
	for _, names := range append([][]string{took, over}, slices.Collect(maps.Values(released))...) {
		slices.SortFunc(names, d.bySpec)
	}
	s := fmt.Sprintf("%-3s took %s", id, list(took))
	for _, why := range slices.Sorted(maps.Keys(released)) {
		s += fmt.Sprintf("; released %s (%s)", list(released[why]), why)
	}
	if len(over) > 0 {
		s += "; took over " + list(over)
	}
	if id == d.victim {
		s += fmt.Sprintf("; stopped at %.2fs without releasing anything", d.stoppedAt.Seconds())
	}
	return s
}

// bySpec orders fleet names as the fleets were applied.
func (d *demo) bySpec(a, b string) int {
	at := func(name string) int {
		return slices.IndexFunc(d.specs, func(s fleet.Spec) bool { return s.Name == name })
	}
	return at(a) - at(b)
}

func list(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n=== report ===\n")
	fmt.Fprintf(w, "cloud time %s in %s of wall time\n", hms(r.cloud), r.wall.Round(10*time.Millisecond))
	fmt.Fprintf(w, "instances: %d created, %d terminated\n", r.created, r.terminated)
	fmt.Fprintln(w, "API calls (three replicas together):")
	for _, c := range r.calls {
		var refused []string
		for _, st := range slices.Sorted(maps.Keys(c.refused)) {
			refused = append(refused, fmt.Sprintf("%d x%d", st, c.refused[st]))
		}
		line := fmt.Sprintf("  %-9s %5d", c.provider, c.total)
		if len(refused) > 0 {
			line += "  (refused: " + strings.Join(refused, ", ") + ")"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "fleets held (from FleetTaken and FleetReleased events):")
	for _, h := range r.held {
		fmt.Fprintf(w, "  %s\n", h)
	}
	if r.takeover > 0 {
		fmt.Fprintf(w, "takeover: %.2fs of wall time from %s's stop until the others held all its fleets (lease TTL %s; expect about TTL + TTL/3 = %.2fs)\n",
			r.takeover.Seconds(), r.victim, r.ttl, (r.ttl + r.ttl/3).Seconds())
	} else {
		fmt.Fprintln(w, "takeover: none happened")
	}
	fmt.Fprintln(w, "bill in USD (the sims' ledgers):")
	var total float64
	for _, b := range r.bill {
		fmt.Fprintf(w, "  %-9s %2d charges %8.2f\n", b.provider, b.charges, b.usd)
		total += b.usd
	}
	fmt.Fprintf(w, "  %-9s %10s %8.2f\n", "all", "", total)
	for _, e := range r.errs {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	fmt.Fprintf(w, "leaked: %d\n", len(r.leaked))
	for _, l := range r.leaked {
		fmt.Fprintf(w, "  %s\n", l)
	}
}
