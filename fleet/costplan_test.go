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
	index := map[string]int{}
	ids := make([]string, 0, len(res.Machines))
	for id := range res.Machines {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y string) int { return int(res.Machines[x][0] - res.Machines[y][0]) })
	for _, id := range ids {
		span := res.Machines[id]
		index[id] = len(p.Machines)
		p.Machines = append(p.Machines, costopt.Machine{Created: span[0], Deleted: span[1]})
	}
	for i, j := range tr.Jobs {
		m := &p.Machines[index[res.Runs[i]]]
		m.Runs = append(m.Runs, costopt.Run{Job: j.ID, Start: j.Arrive + res.Waits[i]})
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
