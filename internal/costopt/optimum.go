//go:build gpufleet_wip

package costopt

import (
	"encoding/binary"
	"math"
	"slices"
	"time"
)

// slot is a machine as the search sees it: the end of its current job (or
// idle when it has none), and the time its billed units run out ("paid").
type slot struct {
	end, paid time.Duration
}

const idle = time.Duration(math.MinInt64)

// choice is the decision taken for a job: reuse the idle machine paid until
// the given time, or start a new one.
const startNew = time.Duration(math.MaxInt64)

type memo struct {
	units  int64
	choice time.Duration
}

type solver struct {
	jobs   []Job
	b      Billing
	sufMin []time.Duration // shortest duration among jobs[k:]
	memo   map[string]memo
	key    []byte
}

func newSolver(t Trace, b Billing) *solver {
	s := &solver{jobs: t.Jobs, b: b, memo: map[string]memo{}}
	s.sufMin = make([]time.Duration, len(t.Jobs)+1)
	s.sufMin[len(t.Jobs)] = math.MaxInt64
	for k := len(t.Jobs) - 1; k >= 0; k-- {
		s.sufMin[k] = min(s.sufMin[k+1], t.Jobs[k].Duration)
	}
	return s
}

// normalize returns the machines as seen at the arrival of job k, sorted:
// busy machines whose job has ended become idle, and idle machines that no
// later job can use more cheaply than a new machine are dropped.
func (s *solver) normalize(ms []slot, k int) []slot {
	a := s.jobs[k].Arrive
	out := ms[:0]
	for _, m := range ms {
		if m.end <= a {
			m.end = idle
		}
		if m.end == idle && s.useless(m.paid, k) {
			continue
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(x, y slot) int {
		if x.end != y.end {
			return cmpDur(x.end, y.end)
		}
		return cmpDur(x.paid, y.paid)
	})
	return out
}

func cmpDur(x, y time.Duration) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// useless reports whether an idle machine paid until paid is never worth
// reusing from job k on: it ran out of paid time at least a boot time ago,
// and any job from k on outlasts the minimum from that point.
func (s *solver) useless(paid time.Duration, k int) bool {
	a := s.jobs[k].Arrive
	return paid <= a-s.b.BootTime && paid <= a+s.sufMin[k]-s.b.Minimum
}

func (s *solver) encode(k int, ms []slot) string {
	s.key = binary.AppendUvarint(s.key[:0], uint64(k))
	for _, m := range ms {
		s.key = binary.AppendVarint(s.key, int64(m.end))
		s.key = binary.AppendVarint(s.key, int64(m.paid))
	}
	return string(s.key)
}

// extend returns the units charged when a machine paid until paid runs a job
// ending at end, and the new paid time.
func (s *solver) extend(paid, end time.Duration) (int64, time.Duration) {
	u := unitsUp(end-paid, s.b.Unit)
	return u, paid + time.Duration(u)*s.b.Unit
}

// fresh returns the units charged for a new machine ready at job j's arrival
// and deleted at its end, and its paid time.
func (s *solver) fresh(j Job) (int64, time.Duration) {
	created := j.Arrive - s.b.BootTime
	u := s.b.Units(j.End() - created)
	return u, created + time.Duration(u)*s.b.Unit
}

// best returns the least number of units needed to serve jobs[k:] from the
// machines ms (normalized at job k).
func (s *solver) best(k int, ms []slot) int64 {
	if k == len(s.jobs) {
		return 0
	}
	key := s.encode(k, ms)
	if m, ok := s.memo[key]; ok {
		return m.units
	}
	j := s.jobs[k]
	u, paid := s.fresh(j)
	next := s.step(ms, -1, slot{j.End(), paid}, k)
	bestU, bestC := u+s.best(k+1, next), startNew
	for i, m := range ms {
		if m.end != idle || i > 0 && ms[i-1].end == idle && ms[i-1].paid == m.paid {
			continue
		}
		u, paid := s.extend(m.paid, j.End())
		if u >= bestU {
			continue
		}
		next := s.step(ms, i, slot{j.End(), paid}, k)
		if total := u + s.best(k+1, next); total < bestU {
			bestU, bestC = total, m.paid
		}
	}
	s.memo[key] = memo{bestU, bestC}
	return bestU
}

// step returns the machines after job k: ms with machine i (or a new machine
// when i < 0) replaced by m, normalized at job k+1.
func (s *solver) step(ms []slot, i int, m slot, k int) []slot {
	next := make([]slot, 0, len(ms)+1)
	next = append(next, ms...)
	if i < 0 {
		next = append(next, m)
	} else {
		next[i] = m
	}
	if k+1 == len(s.jobs) {
		return nil
	}
	return s.normalize(next, k+1)
}
