package fleet

import (
	"context"
	"errors"
	"time"
)

// ErrNoIdle is returned by Acquire when the fleet has no idle instance.
var ErrNoIdle = errors.New("gpufleet: no idle instance")

// Acquire picks the fleet's idle instance whose use saves the most — the
// one with the most paid time left (the rest of its billed hour on Vultr,
// of its minimum reservation on Hot Aisle), oldest first on ties; never one
// whose release is decided — marks it busy at once (no other Acquire gets
// it) and returns it. Give it back with MarkIdle, or Release it. This is how
// an orchestrator places jobs without stranding paid time. Errors:
// ErrNotFound for an unknown fleet, ErrNoIdle when none is idle, ErrClosed.
func (m *Manager) Acquire(ctx context.Context, fleet string) (Instance, error) {
	if m.closed.Load() {
		return Instance{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return Instance{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.fleets[fleet]; !ok {
		m.intents.mu.Lock()
		applied, _ := m.intents.fleetState(fleet)
		m.intents.mu.Unlock()
		if applied {
			return Instance{}, classed(ErrNoIdle, "fleet %s (just applied)", fleet)
		}
		return Instance{}, classed(ErrNotFound, "fleet %s", fleet)
	}
	now := m.clock.Now()
	var best *InstanceRecord
	var bestLeft time.Duration
	for _, r := range m.byFleet[fleet] {
		if r.Instance.Status != StatusIdle || r.Busy || r.Termination != nil || m.acquired[r.Instance.RequestID] {
			continue
		}
		left := m.paidUntil(r, now).Sub(now)
		if best == nil || left > bestLeft || (left == bestLeft && r.Instance.Created.Before(best.Instance.Created)) {
			best, bestLeft = r, left
		}
	}
	if best == nil {
		return Instance{}, classed(ErrNoIdle, "fleet %s", fleet)
	}
	id := best.Instance.RequestID
	m.acquired[id] = true
	m.intents.push(intent{kind: intentBusy, name: id})
	m.wake()
	inst := cloneInst(best.Instance)
	inst.Status = StatusBusy
	return inst, nil
}

// paidUntil is the end of what r has paid for: its billed hour (hourly),
// or its minimum reservation (per minute; now once it is over). m.mu held.
func (m *Manager) paidUntil(r *InstanceRecord, now time.Time) time.Time {
	o, c := r.Instance.Offer, r.Instance.Created
	if c.IsZero() || r.CreatedUnknown {
		return now
	}
	if g := o.BillingGranularity; g >= time.Hour {
		return c.Add(time.Duration(int64(now.Sub(c)/g)+1) * g)
	}
	return maxTime(now, c.Add(o.MinimumReservation))
}
