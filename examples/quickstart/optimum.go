package main

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/internal/costopt"
)

// optimumText says what the offline optimum is, for the report.
const optimumText = "bill beside the offline optimum for the same jobs (the cost benchmark's measure: it knows every\n" +
	"job in advance, starts each node's work when it started here on a machine created just in time, reuses\n" +
	"machines when that is cheaper, and bills by each cloud's rule)"

// offlineOptimum is the least bill, in USD per provider ("" for all), of
// the run's work as a job trace: one job per node that worked, from its
// work start to its work end, per kind of machine (provider and plan).
// It is computed by costopt.Optimum, the measure of the cost benchmark;
// proven reports that every kind's plan was proven optimal (otherwise the
// figure is the best plan found). Every provider charged has a figure, 0
// when none of its nodes worked; the sums are exact (see micros), so the
// optimum and the bill of the same amounts print the same. It is nil only
// when the optimum could not be computed (the run's errors say why).
func (d *driver) offlineOptimum(charges []charge) (usd map[string]float64, proven bool) {
	d.mu.Lock()
	start, end := maps.Clone(d.workStart), maps.Clone(d.workEnd)
	d.mu.Unlock()
	sums := map[string]micros{"": 0}
	kinds := map[string][]charge{}
	for _, c := range charges {
		sums[c.provider] += 0
		if _, ok := start[c.id]; ok {
			kinds[c.provider+"\x00"+c.plan] = append(kinds[c.provider+"\x00"+c.plan], c)
		}
	}
	proven = true
	for _, cs := range kinds {
		trace, b := kindTrace(cs, start, end, d.start)
		opt, err := costopt.Optimum(trace, b)
		if err != nil {
			d.fail("offline optimum: %v", err)
			return nil, false
		}
		var bill micros
		for _, m := range opt.Machines {
			cost := b.Cost(m.Alive())
			if cs[0].ledger { // beside the ledgers' charges: rounded as they are
				cost = ledgerRounded(cs[0].provider, cost)
			}
			bill += toMicros(cost)
		}
		sums[cs[0].provider] += bill
		sums[""] += bill
		proven = proven && opt.Proven
	}
	usd = map[string]float64{}
	for p, s := range sums {
		usd[p] = s.usd()
	}
	return usd, proven
}

// kindTrace is the work done on one kind of machine as a costopt trace
// (offsets from t0) and that kind's billing: Vultr per started hour with a
// one-hour minimum, Hot Aisle per started minute with the offer's minimum
// reservation; the boot time is the shortest create-to-work time of its
// charges.
func kindTrace(cs []charge, start, end map[string]time.Time, t0 time.Time) (costopt.Trace, costopt.Billing) {
	c0 := cs[0]
	b := costopt.Billing{Name: c0.plan, Unit: time.Minute, Minimum: c0.minimum.Round(time.Minute), PricePerHour: c0.rate}
	if c0.provider == fleet.ProviderVultr {
		b.Unit, b.Minimum = time.Hour, max(time.Hour, (c0.minimum+time.Hour-1)/time.Hour*time.Hour)
	}
	var jobs []costopt.Job
	for i, c := range cs {
		s := start[c.id]
		boot := max(s.Sub(c.created), 0)
		if i == 0 || boot < b.BootTime {
			b.BootTime = boot
		}
		jobs = append(jobs, costopt.Job{Arrive: s.Sub(t0), Duration: max(end[c.id].Sub(s), time.Second)})
	}
	slices.SortStableFunc(jobs, func(x, y costopt.Job) int { return cmp.Compare(x.Arrive, y.Arrive) })
	for i := range jobs {
		jobs[i].ID = i
	}
	return costopt.Trace{Jobs: jobs}, b
}
