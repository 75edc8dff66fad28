package fleet

import (
	"context"
	"errors"
	"fmt"
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
// ErrNotFound for an unknown fleet or one whose Delete is recorded, ErrNoIdle
// when none is idle (a node whose Release or MarkBusy is recorded but not
// yet carried out counts as taken), ErrClosed. With replicas, only the
// replica holding the fleet's lease hands out its nodes (so that none is
// handed out twice); another replica answers ErrNoIdle wrapping a
// *LeaseHeldError that names the holder (errors.As), or ErrNoIdle alone
// while no replica holds it. The holder records the busy mark in the
// shared store before it returns the node (a node whose Release or MarkBusy
// was recorded through any replica counts as taken), so that the replica
// taking the fleet over after the holder's death does not hand it out
// again; when that write fails, Acquire returns an error answering
// ErrNotRecorded (and wrapping the store's error) and the node stays idle.
// A write whose answer was lost but which the store committed is found by
// a read of the fleet's intents and the node handed out; when that read
// fails too, the error is returned and this holder does not carry the
// stored mark out should it appear later (Intent.Acquire).
func (m *Manager) Acquire(ctx context.Context, fleet string) (Instance, error) {
	if m.closed.Load() {
		return Instance{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return Instance{}, err
	}
	if m.rep != nil {
		if !m.holdsNow(fleet) {
			return Instance{}, m.acquireElsewhere(ctx, fleet)
		}
		return m.acquireStored(ctx, fleet)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	best, err := m.pickIdle(fleet, nil)
	if err != nil {
		return Instance{}, err
	}
	m.intents.push(intent{kind: intentBusy, name: best.Instance.RequestID})
	m.wake()
	return handedOut(best), nil
}

// pickIdle chooses the idle instance of fleet Acquire hands out (none in
// skip) and reserves it (no other Acquire gets it until its busy intent
// is carried out). m.mu held.
func (m *Manager) pickIdle(fleet string, skip map[string]bool) (*InstanceRecord, error) {
	m.intents.mu.Lock()
	applied, deleted := m.intents.fleetState(fleet)
	taken := m.intents.takenInstances()
	m.intents.mu.Unlock()
	if _, ok := m.fleets[fleet]; !ok || deleted {
		if applied && !deleted {
			return nil, classed(ErrNoIdle, "fleet %s (just applied)", fleet)
		}
		return nil, classed(ErrNotFound, "fleet %s", fleet)
	}
	now := m.clock.Now()
	var best *InstanceRecord
	var bestLeft time.Duration
	for _, r := range m.byFleet[fleet] {
		id := r.Instance.RequestID
		if r.Instance.Status != StatusIdle || r.Busy || r.Termination != nil || m.acquired[id] || taken[id] || skip[id] {
			continue
		}
		left := m.paidUntil(r, now).Sub(now)
		if best == nil || left > bestLeft || (left == bestLeft && r.Instance.Created.Before(best.Instance.Created)) {
			best, bestLeft = r, left
		}
	}
	if best == nil {
		return nil, classed(ErrNoIdle, "fleet %s", fleet)
	}
	m.acquired[best.Instance.RequestID] = true
	return best, nil
}

// handedOut is the Instance Acquire returns for r: a copy, busy.
func handedOut(r *InstanceRecord) Instance {
	inst := cloneInst(r.Instance)
	inst.Status = StatusBusy
	return inst
}

// paidUntil is the end of what r has paid for: its billed hour or its
// minimum reservation, the later (hourly), or its minimum reservation (per minute; now once it is over). m.mu held.
func (m *Manager) paidUntil(r *InstanceRecord, now time.Time) time.Time {
	o, c := r.Instance.Offer, r.Instance.Created
	if c.IsZero() || r.CreatedUnknown {
		return now
	}
	if g := o.BillingGranularity; g >= time.Hour {
		return maxTime(c.Add(time.Duration(int64(now.Sub(c)/g)+1)*g), c.Add(o.MinimumReservation))
	}
	return maxTime(now, c.Add(o.MinimumReservation))
}

// holdsNow reports whether this replica may act on fleet now.
func (m *Manager) holdsNow(fleet string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holds(fleet, m.clock.Now())
}

// acquireElsewhere is Acquire's answer on a replica that does not hold
// fleet: ErrNotFound when the shared store has no such fleet, else ErrNoIdle
// with the holder's lease when there is one.
func (m *Manager) acquireElsewhere(ctx context.Context, fleet string) error {
	ctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
	defer cancel()
	if !m.storedFleet(ctx, fleet) {
		return classed(ErrNotFound, "fleet %s", fleet)
	}
	leases, err := m.rep.ls.Leases(ctx)
	if err != nil {
		return fmt.Errorf("gpufleet: fleet %s: %w (reading its lease: %v)", fleet, ErrNoIdle, err)
	}
	for _, l := range leases {
		if l.Name == FleetLease(fleet) {
			return fmt.Errorf("gpufleet: fleet %s: %w here: %w", fleet, ErrNoIdle,
				&LeaseHeldError{Name: l.Name, Holder: l.Holder, Expires: l.Expires})
		}
	}
	return fmt.Errorf("gpufleet: fleet %s: %w (no replica holds it yet)", fleet, ErrNoIdle)
}
