package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrReplicaIDInUse is answered by the error Run returns when another live
// process runs with this Manager's Config.ReplicaID (see
// ReplicaIDInUseError).
var ErrReplicaIDInUse = errors.New("gpufleet: replica id in use by another process")

// ReplicaIDInUseError is the error Run (and Reconcile) returns when
// another live process holds this Manager's replica lease
// "replica/<ReplicaID>": two processes were given the same ReplicaID. The
// lease's holder is the ReplicaID and a random suffix drawn by NewManager,
// so each process knows its own. A Manager that finds the lease held takes
// no fleet and does no other work (EventReplicaIDInUse), and keeps trying:
// a process restarted with its id after a crash gets the lease once its
// dead predecessor's expires (within Policy.LeaseTTL) and carries on. When
// the holder renews it meanwhile, it is alive, and Run returns this error;
// the other process goes on alone. Way out: give each process its own
// ReplicaID, or stop the other one and call Run again (it waits until the
// other's lease runs out).
// Answers errors.Is for ErrReplicaIDInUse and ErrLeaseHeld, and errors.As
// for *LeaseHeldError.
type ReplicaIDInUseError struct {
	ReplicaID string
	Held      *LeaseHeldError // the lease as last seen held by the other process
}

func (e *ReplicaIDInUseError) Error() string {
	return fmt.Sprintf("gpufleet: replica id %q is in use by another live process (lease %q renewed by %q until %s, store clock): give each replica its own id",
		e.ReplicaID, e.Held.Name, e.Held.Holder, e.Held.Expires.Format("2006-01-02T15:04:05.999Z07:00"))
}

// Is answers ErrReplicaIDInUse.
func (e *ReplicaIDInUseError) Is(target error) bool { return target == ErrReplicaIDInUse }

// Unwrap returns the *LeaseHeldError.
func (e *ReplicaIDInUseError) Unwrap() error { return e.Held }

// selfHolder is the holder of this process's replica lease: the replica id
// and a random suffix, so that a second process with the same id is told
// apart (its acquisition is refused).
func selfHolder(id string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return id + "#" + hex.EncodeToString(b)
}

// standDown applies a lease sync that found this replica's lease held by
// another process: every fleet is dropped and no work is done until the
// lease is this process's again. When the other process renewed the lease
// since it was first seen held, it is alive: the loop then returns a
// *ReplicaIDInUseError. m.mu held.
func (m *Manager) standDown(held *LeaseHeldError) {
	r := m.rep
	for name := range r.held {
		m.dropFleet(name, "another process runs with this replica's id")
	}
	r.self, r.gc = Lease{}, Lease{}
	first := r.conflict == nil
	if first {
		r.conflict = held
	} else if r.fatal == nil && (held.Holder != r.conflict.Holder || held.Expires.After(r.conflict.Expires)) {
		r.fatal = &ReplicaIDInUseError{ReplicaID: r.holder, Held: held}
	}
	switch {
	case r.fatal != nil && !r.fatalSaid:
		r.fatalSaid = true
		m.event(Event{Type: EventReplicaIDInUse, Err: r.fatal.Error(), Message: "the other process is alive: this one stands down for good"})
	case first:
		m.event(Event{Type: EventReplicaIDInUse, Err: held.Error(),
			Message: "another process holds this replica's id: this one takes no fleet until that lease runs out"})
	}
}

// forgetConflict has Run judge afresh whether another process holds this
// replica's id (a Run called again after it returned a
// *ReplicaIDInUseError waits for the lease again).
func (m *Manager) forgetConflict() {
	if m.rep == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rep.conflict, m.rep.fatal, m.rep.fatalSaid = nil, nil, false
}

// replicaErr is the error that ends Run: another live process runs with
// this replica's id.
func (m *Manager) replicaErr() error {
	if m.rep == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rep.fatal == nil {
		return nil
	}
	return m.rep.fatal
}

// inherited releases, before this replica acquires it, a live lease of its
// name held under this replica's id by another process (a predecessor with
// the same id, dead or paused): acquired again, it gets a newer token, so
// the writes of that process are fenced. leases are the live ones.
func (r *replica) inherited(ctx context.Context, name string, leases []Lease) {
	for _, l := range leases {
		if l.Name == name && l.Holder == r.holder {
			_ = r.ls.ReleaseLease(ctx, l)
		}
	}
}
