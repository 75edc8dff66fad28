package costopt

import (
	"fmt"
	"slices"
	"time"
)

// Pick chooses which idle machine a new job reuses when there are several.
type Pick int

const (
	// PickOldest reuses the machine created first.
	PickOldest Pick = iota
	// PickMostPaid reuses the machine whose paid time (billed units and
	// minimum) runs out last, ties to the oldest.
	PickMostPaid
)

// Rules is a simple online policy, replayed on a trace without knowing the
// future: a job that arrives reuses an idle machine if there is one (and
// starts at once), else a new machine is created at its arrival and the job
// starts when it has booted. A machine that becomes idle is deleted after
// IdleTimeout, or, with KeepPaid, not before its paid time runs out either.
type Rules struct {
	Name        string
	IdleTimeout time.Duration
	KeepPaid    bool
	Pick        Pick
}

// DstackRules are dstack's defaults for instances a run provisions: an
// instance idle for 5 minutes is terminated whatever it has paid for (Hot
// Aisle machines are deleted with force, so their minimum is charged), and a
// new job reuses an idle instance or provisions a new one. dstack's choice
// among several idle instances is not modelled; the oldest is taken. Its
// check interval (seconds) is ignored.
func DstackRules() Rules {
	return Rules{Name: "dstack", IdleTimeout: 5 * time.Minute, Pick: PickOldest}
}

// PaidWindowRules keep an idle machine exactly until its paid time runs out
// (the end of its started billing unit, or of its minimum reservation) and
// reuse the machine with the most paid time left: a billing-aware online
// policy, for comparison.
func PaidWindowRules() Rules {
	return Rules{Name: "paid window", KeepPaid: true, Pick: PickMostPaid}
}

// Replayed is the outcome of a replay: the plan the rules produce and each
// job's wait from its arrival to its start, in trace order.
type Replayed struct {
	Plan
	Waits []time.Duration
}

// MeanWait is the average of Waits (zero for an empty trace).
func (r Replayed) MeanWait() time.Duration {
	if len(r.Waits) == 0 {
		return 0
	}
	var sum time.Duration
	for _, w := range r.Waits {
		sum += w
	}
	return sum / time.Duration(len(r.Waits))
}

// ReplayDstack replays DstackRules.
func ReplayDstack(t Trace, b Billing) (Replayed, error) { return Replay(t, b, DstackRules()) }

// Replay serves t under rules r on machines billed by b and returns the plan
// and the waits. It returns an error when t or b is invalid or r has a
// negative idle timeout.
func Replay(t Trace, b Billing, r Rules) (Replayed, error) {
	if err := t.Validate(); err != nil {
		return Replayed{}, err
	}
	if err := b.Validate(); err != nil {
		return Replayed{}, err
	}
	if r.IdleTimeout < 0 {
		return Replayed{}, fmt.Errorf("costopt: negative idle timeout %v", r.IdleTimeout)
	}
	rp := replayer{b: b, r: r}
	out := Replayed{Plan: Plan{Billing: b}, Waits: make([]time.Duration, len(t.Jobs))}
	for i, j := range t.Jobs {
		out.Waits[i] = rp.serve(j)
	}
	for _, m := range rp.machines {
		if !m.gone {
			m.Deleted = rp.deleteAt(m)
		}
		out.Machines = append(out.Machines, m.Machine)
	}
	return out, nil
}

type replayer struct {
	b        Billing
	r        Rules
	machines []*replayed
}

type replayed struct {
	Machine
	busyUntil time.Duration
	gone      bool
}

// serve places job j and returns its wait.
func (rp *replayer) serve(j Job) time.Duration {
	m := rp.idle(j.Arrive)
	start := j.Arrive
	if m == nil {
		m = &replayed{Machine: Machine{Created: j.Arrive}}
		rp.machines = append(rp.machines, m)
		start += rp.b.BootTime
	}
	m.Runs = append(m.Runs, Run{Job: j.ID, Start: start})
	m.busyUntil = start + j.Duration
	return start - j.Arrive
}

// idle deletes the machines whose time is up at now and returns the idle
// machine the rules pick, or nil.
func (rp *replayer) idle(now time.Duration) *replayed {
	var free []*replayed
	for _, m := range rp.machines {
		if m.gone || m.busyUntil > now {
			continue
		}
		if at := rp.deleteAt(m); at <= now {
			m.gone, m.Deleted = true, at
			continue
		}
		free = append(free, m)
	}
	if len(free) == 0 {
		return nil
	}
	if rp.r.Pick == PickMostPaid {
		return slices.MaxFunc(free, func(x, y *replayed) int {
			return cmpDur(rp.paidUntil(x), rp.paidUntil(y))
		})
	}
	return free[0]
}

// deleteAt is when an idle machine is deleted under the rules.
func (rp *replayer) deleteAt(m *replayed) time.Duration {
	at := m.busyUntil + rp.r.IdleTimeout
	if rp.r.KeepPaid {
		at = max(at, rp.paidUntil(m))
	}
	return at
}

// paidUntil is when the billed time of a machine that went idle runs out.
func (rp *replayer) paidUntil(m *replayed) time.Duration {
	return m.Created + time.Duration(rp.b.Units(m.busyUntil-m.Created))*rp.b.Unit
}
