package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpufleet/gpufleet/examples/internal/hint"
	"github.com/gpufleet/gpufleet/fleet"
)

// intro says what will run: the world, the faults switched on, the offers
// each fleet may use (from the Manager's catalog, which caches them) and
// the least the work can cost. On the sim it then sells out the cluster's
// first choice, so that the Manager meets the refusal at create time.
func (d *driver) intro(ctx context.Context) error {
	out := d.out
	if d.cfg.real {
		var names []string
		for _, p := range d.w.providers {
			names = append(names, p.Name())
		}
		fmt.Fprintf(out, "gpufleet quickstart on the real clouds: %s\n", strings.Join(names, ", "))
	} else {
		fmt.Fprintf(out, "gpufleet quickstart on the in-process sim: one cloud hour per %s of wall time (-speed %g)\n",
			wallPerHour(d.cfg.speed), d.cfg.speed)
		fmt.Fprintln(out, "Faults switched on:")
		for _, n := range faultNotes {
			fmt.Fprintln(out, "  - "+n)
		}
	}
	var all []fleet.Offer
	seen := map[string]bool{}
	var kept []job
	var least micros
	for _, j := range d.jobs {
		offers, err := d.m.Offers(ctx, j.requirements())
		if err != nil && ctx.Err() != nil {
			return errInterrupted // nothing rented yet
		}
		if err != nil {
			fmt.Fprintf(out, "warning: fleet %s: listing offers failed: %v\n", j.spec.Name, err)
		}
		if len(offers) == 0 {
			if err != nil {
				d.fail("fleet %s: listing offers failed, so none can be chosen; skipped", j.spec.Name)
			} else if err := d.noMatch(ctx, j); err != nil {
				return err
			}
			continue
		}
		kept = append(kept, j)
		o := offers[0]
		least += micros(j.spec.Nodes) * toMicros(leastUSD(o.Provider, o.PricePerHour, d.start, d.start.Add(j.work), o.MinimumReservation))
		for _, o := range offers {
			if !seen[o.Key()] {
				seen[o.Key()] = true
				all = append(all, o)
			}
		}
	}
	d.jobs = kept
	if len(kept) == 0 {
		return fmt.Errorf("no fleet can run (see above)")
	}
	fmt.Fprintln(out, "\nOffers the fleets may use (USD per hour):")
	if err := fleet.WriteOffers(out, all); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nFleets:")
	for _, j := range kept {
		where := "anywhere"
		if j.spec.Placement == fleet.PlacementCluster {
			where = "one region, one VPC"
		}
		fmt.Fprintf(out, "  %-6s %d x %s (%s), then %s of work per node\n", j.spec.Name, j.spec.Nodes,
			describe(j.spec.Requirements), where, j.work)
	}
	fmt.Fprintf(out, "The work alone costs at least $%s at these prices (boot time not counted).\n", least)
	fmt.Fprintf(out, "%s\n\n", idLegend)
	if d.w.sims != nil {
		return d.sellOutFirstChoice(ctx)
	}
	return nil
}

// sellOutFirstChoice sells out the cluster fleet's cheapest offer in the
// fake after it was listed (when there is another to fall back on).
func (d *driver) sellOutFirstChoice(ctx context.Context) error {
	for _, j := range d.jobs {
		if j.spec.Placement != fleet.PlacementCluster {
			continue
		}
		offers, _ := d.m.Offers(ctx, j.requirements())
		if len(offers) < 2 {
			continue
		}
		o := offers[0]
		if err := d.w.sims.sellOut(o); err != nil {
			return err
		}
		d.ui.printf("(sim) %s %s just sold out in %s: the catalog still lists it.\n", o.Provider, o.InstanceType, o.Region)
	}
	return nil
}

// noMatch explains why no offer matches job j: a name no offer has (a bad
// command line, returned as a usageError) or filters that exclude every
// offer (the job is skipped).
func (d *driver) noMatch(ctx context.Context, j job) error {
	r := j.requirements()
	all, err := d.m.Offers(ctx, fleet.Requirements{Providers: r.Providers, IncludeSoldOut: true})
	if err != nil {
		d.fail("fleet %s: listing offers failed: %v; skipped", j.spec.Name, err)
		return nil
	}
	if err := hint.Unknown(r, all); err != nil {
		return usageError{err}
	}
	var why []string
	for _, x := range hint.Relax(r, all) {
		w := fmt.Sprintf("dropping %s would match %d", x.What, x.Matches)
		if x.What == "the instance type" {
			w += fmt.Sprintf(": try -%s-plan %s", r.Providers[0], strings.Join(x.Types, " or "))
		}
		why = append(why, w)
	}
	if len(why) == 0 {
		why = []string{"no single requirement is to blame"}
	}
	d.fail("fleet %s: 0 of %d %s offers match %s (%s); skipped", j.spec.Name, len(all), strings.Join(r.Providers, "/"),
		describe(r), strings.Join(why, ", "))
	return nil
}

// usageError is a bad command line found after the offers were listed.
type usageError struct{ error }

func describe(r fleet.Requirements) string {
	var parts []string
	parts = append(parts, strings.Join(r.Providers, "/"))
	if len(r.InstanceTypes) > 0 {
		parts = append(parts, strings.Join(r.InstanceTypes, "/"))
	}
	if r.GPUModel != "" {
		g := r.GPUModel
		if r.GPUCount > 0 {
			g = fmt.Sprintf("%dx %s", r.GPUCount, r.GPUModel)
		}
		parts = append(parts, g)
	}
	switch r.BareMetal {
	case fleet.Yes:
		parts = append(parts, "bare metal")
	case fleet.No:
		parts = append(parts, "VM")
	}
	return strings.Join(parts, " ")
}
