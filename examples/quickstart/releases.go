package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/fleet"
)

// forcedEarly is a provider's releases forced before the minimum
// reservation ended (Hot Aisle's forced release: the unused minimum is
// charged, not refunded): how many instances, and the USD of the minimum
// they left unused.
type forcedEarly struct {
	count int
	usd   float64
}

// releasesOf splits, per provider, the releases that the events tell of:
// held for a reservation window (each ReleaseDeferred of an instance whose
// release was not forced: it waited for the window to end) and forced
// before the minimum reservation ended (the instances with a
// ReleaseForced, held first or not). The USD of a forced release's unused
// minimum is its charge's Unrefunded where a fake's ledger billed it (what
// was charged), else the most its ReleaseForced events said.
func releasesOf(events []fleet.Event, charges []charge) (held map[string]int, forced map[string]forcedEarly) {
	said := map[[2]string]float64{} // provider, instance id → USD its ReleaseForced said
	for _, e := range events {
		if e.Type == fleet.EventReleaseForced {
			k := [2]string{e.Provider, e.InstanceID}
			said[k] = max(said[k], e.USD)
		}
	}
	held, forced = map[string]int{}, map[string]forcedEarly{}
	for _, e := range events {
		if _, ok := said[[2]string{e.Provider, e.InstanceID}]; e.Type == fleet.EventReleaseDeferred && !ok {
			held[e.Provider]++
		}
	}
	ledger := map[[2]string]float64{}
	for _, c := range charges {
		if c.ledger {
			ledger[[2]string{c.provider, c.id}] += c.unrefunded
		}
	}
	for k, usd := range said {
		if u, ok := ledger[k]; ok {
			usd = u
		}
		f := forced[k[0]]
		f.count++
		f.usd = (toMicros(f.usd) + toMicros(usd)).usd()
		forced[k[0]] = f
	}
	return held, forced
}

// heldOf counts provider's ReleaseDeferred events: releases held for a
// reservation window, forced later or not.
func heldOf(events []fleet.Event, provider string) int {
	n := 0
	for _, e := range events {
		if e.Type == fleet.EventReleaseDeferred && e.Provider == provider {
			n++
		}
	}
	return n
}

// printReleases prints the releases held for a reservation window and
// those forced before the minimum ended, per provider; a line only when
// there are some.
func (r *report) printReleases(w io.Writer) {
	if len(r.deferred) > 0 {
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(r.deferred)) {
			parts = append(parts, fmt.Sprintf("%s %d", p, r.deferred[p]))
		}
		fmt.Fprintf(w, "releases held for a reservation window (paid anyway): %s\n", strings.Join(parts, ", "))
	}
	if len(r.forced) > 0 {
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(r.forced)) {
			parts = append(parts, fmt.Sprintf("%s %d ($%s)", p, r.forced[p].count, usd(r.forced[p].usd)))
		}
		fmt.Fprintf(w, "releases forced early (the unused minimum charged, not refunded): %s\n", strings.Join(parts, ", "))
	}
}
