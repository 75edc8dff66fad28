package costopt

import (
	"fmt"
	"time"
)

// Run is one job served by a machine, started at Start (an offset from the
// start of the trace, at or after the job's arrival).
type Run struct {
	Job   int
	Start time.Duration
}

// Machine is one rented machine: created at Created, deleted at Deleted
// (offsets from the start of the trace; Created may be negative when the
// machine is started before the trace begins), serving Runs one after the
// other in order.
type Machine struct {
	Created time.Duration
	Deleted time.Duration
	Runs    []Run
}

// Alive is the billed time of the machine, from its creation to its
// deletion.
func (m Machine) Alive() time.Duration { return m.Deleted - m.Created }

// Plan is a way to serve a trace: the machines rented, billed by Billing.
type Plan struct {
	Billing  Billing
	Machines []Machine
}

// Units is the total number of billing units charged for the plan.
func (p Plan) Units() int64 {
	var n int64
	for _, m := range p.Machines {
		n += p.Billing.Units(m.Alive())
	}
	return n
}

// Bill is the plan's total charge in USD.
func (p Plan) Bill() float64 { return p.Billing.usd(float64(p.Units())) }

// JobWaits returns how long each job of the trace waited from its arrival to its
// start, in trace order. It returns an error when the plan does not serve
// every job of the trace exactly once.
func (p Plan) JobWaits(t Trace) ([]time.Duration, error) {
	index := make(map[int]int, len(t.Jobs))
	for i, j := range t.Jobs {
		index[j.ID] = i
	}
	waits := make([]time.Duration, len(t.Jobs))
	served := make([]bool, len(t.Jobs))
	for _, m := range p.Machines {
		for _, r := range m.Runs {
			i, ok := index[r.Job]
			if !ok || served[i] {
				return nil, fmt.Errorf("costopt: job %d is unknown or served twice", r.Job)
			}
			served[i], waits[i] = true, r.Start-t.Jobs[i].Arrive
		}
	}
	for i, ok := range served {
		if !ok {
			return nil, fmt.Errorf("costopt: job %d is not served", t.Jobs[i].ID)
		}
	}
	return waits, nil
}

// Check returns an error unless the plan serves every job of the trace
// exactly once, no job starts before its arrival, and every machine runs its
// jobs one at a time, only after it has booted and before it is deleted.
func (p Plan) Check(t Trace) error {
	waits, err := p.JobWaits(t)
	if err != nil {
		return err
	}
	dur := make(map[int]time.Duration, len(t.Jobs))
	for i, j := range t.Jobs {
		if waits[i] < 0 {
			return fmt.Errorf("costopt: job %d starts before it arrives", j.ID)
		}
		dur[j.ID] = j.Duration
	}
	for i, m := range p.Machines {
		free := m.Created + p.Billing.BootTime
		for _, r := range m.Runs {
			if r.Start < free {
				return fmt.Errorf("costopt: machine %d starts job %d at %v, before it is free at %v", i, r.Job, r.Start, free)
			}
			free = r.Start + dur[r.Job]
		}
		if free > m.Deleted {
			return fmt.Errorf("costopt: machine %d is deleted at %v, before its work ends at %v", i, m.Deleted, free)
		}
	}
	return nil
}
