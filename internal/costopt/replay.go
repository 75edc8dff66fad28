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
	// Check is how often the idle rule is looked at (zero: continuously):
	// an idle machine is deleted at the first check, every Check from its
	// creation, after it has been idle longer than IdleTimeout (strictly).
	Check time.Duration
	// Refusals applies where the Billing has RefusedInMinimum: a delete
	// inside the minimum is sent without force (except VM deletes with
	// ForceVMDeletes) and refused; it is retried every RetryEvery (zero: 30
	// s) and succeeds at the first retry after the minimum, unless that
	// retry would start GiveUp or more after the first refusal (zero: never
	// given up; dstack's next retry must start before the first one's time
	// plus its budget): then the machine is
	// forgotten and keeps running, billed to the end of the trace (the
	// latest job end, at least its minimum: a lower bound of a bill that
	// has no end). A machine being deleted takes no job.
	ForceVMDeletes bool
	RetryEvery     time.Duration
	GiveUp         time.Duration
}

// DstackRules are dstack's defaults for instances a run provisions (its
// idle check and termination retries): an instance idle for more than 5 minutes is
// terminated whatever it has paid for, at the first of its idle checks (14
// s apart); Hot Aisle VM deletes are sent with force (the minimum is
// charged); other deletes are retried every 30 s for 15 minutes of
// failures, after which the instance is marked terminated and never looked
// at again — a Hot Aisle bare-metal server refused inside its 8-hour
// minimum keeps running (dstack issue 3241). A new job reuses an idle instance or
// provisions a new one; dstack's choice among several idle instances is
// not modelled (the oldest is taken).
func DstackRules() Rules {
	return Rules{Name: "dstack", IdleTimeout: 5 * time.Minute, Pick: PickOldest, Check: 14 * time.Second,
		ForceVMDeletes: true, RetryEvery: 30 * time.Second, GiveUp: 15 * time.Minute}
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
	if r.IdleTimeout < 0 || r.Check < 0 || r.RetryEvery < 0 || r.GiveUp < 0 {
		return Replayed{}, fmt.Errorf("costopt: negative duration in rules %+v", r)
	}
	rp := replayer{b: b, r: r}
	out := Replayed{Plan: Plan{Billing: b}, Waits: make([]time.Duration, len(t.Jobs))}
	for i, j := range t.Jobs {
		out.Waits[i] = rp.serve(j)
	}
	var end time.Duration // the latest job end
	for _, m := range rp.machines {
		end = max(end, m.busyUntil)
	}
	for _, m := range rp.machines {
		if !m.gone {
			_, m.Deleted, m.forgotten = rp.leave(m)
		}
		if m.forgotten {
			m.Deleted = max(end, m.Created+rp.b.Minimum)
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
	forgotten bool // its delete was given up: it runs to the end of the trace
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
		if at, deleted, forgotten := rp.leave(m); at <= now {
			m.gone, m.Deleted, m.forgotten = true, deleted, forgotten
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

// leave is when an idle machine stops taking jobs under the rules (its
// delete is decided), when it is deleted, and whether its delete is given
// up (then it runs on).
func (rp *replayer) leave(m *replayed) (at, deleted time.Duration, forgotten bool) {
	at = m.busyUntil + rp.r.IdleTimeout
	if c := rp.r.Check; c > 0 {
		at = m.Created + ((at-m.Created)/c+1)*c // the first check after
	}
	if rp.r.KeepPaid {
		at = max(at, rp.paidUntil(m))
	}
	minEnd := m.Created + rp.b.Minimum
	if !rp.b.RefusedInMinimum || at >= minEnd || (rp.r.ForceVMDeletes && !rp.b.BareMetal) {
		return at, at, false
	}
	every := rp.r.RetryEvery
	if every <= 0 {
		every = 30 * time.Second
	}
	deleted = at + (minEnd-at+every-1)/every*every  // the first retry after the minimum
	if g := rp.r.GiveUp; g > 0 && deleted-at >= g { // the next retry must start before at+GiveUp
		return at, 0, true
	}
	return at, deleted, false
}

// paidUntil is when the billed time of a machine that went idle runs out.
func (rp *replayer) paidUntil(m *replayed) time.Duration {
	return m.Created + time.Duration(rp.b.Units(m.busyUntil-m.Created))*rp.b.Unit
}
