package fleet_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/costopt"
)

// fleetPlan is what gpufleet did on a trace, as a costopt plan: one
// machine per charge of the sims' ledgers, with the jobs it ran.
func fleetPlan(tr costopt.Trace, res driveResult, b costopt.Billing) costopt.Plan {
	p := costopt.Plan{Billing: b}
	spans := slices.Clone(res.Machines)
	slices.SortStableFunc(spans, func(x, y machineSpan) int { return int(x.From - y.From) })
	for _, s := range spans {
		p.Machines = append(p.Machines, costopt.Machine{Created: s.From, Deleted: s.To})
	}
	for i, j := range tr.Jobs {
		start := j.Arrive + res.Waits[i]
		k := slices.IndexFunc(spans, func(s machineSpan) bool { return s.ID == res.Runs[i] && s.From <= start && start <= s.To })
		m := &p.Machines[k]
		m.Runs = append(m.Runs, costopt.Run{Job: j.ID, Start: start})
	}
	for i := range p.Machines {
		slices.SortFunc(p.Machines[i].Runs, func(x, y costopt.Run) int { return int(x.Start - y.Start) })
	}
	return p
}

// dumpPlan logs a plan, machine by machine: its span in minutes, billed
// units and jobs (arrival, start, end; how much longer than under dstack's
// replay a job waited).
func dumpPlan(t *testing.T, tr costopt.Trace, name string, p costopt.Plan, waits, ds []time.Duration) {
	var b strings.Builder
	m := func(d time.Duration) string { return fmt.Sprintf("%.1f", d.Minutes()) }
	for _, mc := range p.Machines {
		fmt.Fprintf(&b, "  [%s..%s] %d:", m(mc.Created), m(mc.Deleted), p.Billing.Units(mc.Alive()))
		for _, r := range mc.Runs {
			j := tr.Jobs[r.Job]
			fmt.Fprintf(&b, " j%d(a%s s%s e%s", r.Job, m(j.Arrive), m(r.Start), m(r.Start+j.Duration))
			if waits != nil && waits[r.Job] > ds[r.Job] {
				fmt.Fprintf(&b, " WAIT+%s", m(waits[r.Job]-ds[r.Job]))
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
	}
	t.Logf("%s plan:\n%s", name, b.String())
}
