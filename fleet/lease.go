package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors of conditional and fenced writes, and of leases. Stores return
// typed errors that answer errors.Is for these (ErrNotRecorded is the
// Manager's: a store write of an intent failed).
var (
	// ErrStaleWrite: a PutFleet or PutInstance carried a Version other than
	// the stored record's: another writer wrote the record since this one
	// read it. Nothing was written; read the record again.
	ErrStaleWrite = errors.New("gpufleet: stale write")
	// ErrFenced: a write was made under a lease that is no longer the
	// newest of its name (another replica acquired it since), or under a
	// context whose leases do not cover the record. Nothing was written.
	ErrFenced = errors.New("gpufleet: write fenced by a newer lease")
	// ErrLeaseHeld: AcquireLease found the lease held, unexpired, by
	// another holder.
	ErrLeaseHeld = errors.New("gpufleet: lease held by another holder")
	// ErrLeaseLost: RenewLease found the lease expired or acquired by
	// another holder since; acquire it again (with a new token).
	ErrLeaseLost = errors.New("gpufleet: lease lost")
	// ErrNotRecorded: a Manager replica (Config.ReplicaID) could not record
	// a call's intent in its LeaseStore (the store's error is wrapped too):
	// the call failed before its write, or the write answered an error and
	// a read of the fleet's pending intents right after did not find it (a
	// write whose answer was lost but which the store committed is found
	// there, and the call answers nil). Call again. Acquire also records an
	// IntentVoid then, so that its busy mark is never carried out (or is
	// undone) should the store have committed it after all: nothing was
	// handed out. For the other calls nothing is carried out unless the
	// store committed the write yet answered only after that read (its
	// answer late by more than a lease sync, when the holder may have
	// acknowledged the intent already, or the commit itself late); calling
	// again is safe either way (see ErrMaybeRecorded).
	ErrNotRecorded = errors.New("gpufleet: intent not recorded")
	// ErrMaybeRecorded: a Manager replica's write of a call's intent
	// answered an error, and the read that would have told whether the
	// store committed it failed too (both errors are wrapped): the call may
	// yet be carried out, or not. Calling again is safe: Apply, Delete,
	// Release, MarkBusy and MarkIdle repeated have the effect of one call
	// (a Delete repeated once the fleet is gone answers ErrNotFound; a
	// MarkIdle repeated restarts the node's idle clock). Acquire never
	// answers it: it voids its mark and answers ErrNotRecorded.
	ErrMaybeRecorded = errors.New("gpufleet: intent perhaps recorded")
	// ErrStoreUnreadable: a read of the shared store failed (ListFleets);
	// what it answers is not known to be all there is.
	ErrStoreUnreadable = errors.New("gpufleet: the shared store could not be read")
)

// StaleWriteError is the error of a refused conditional write.
type StaleWriteError struct {
	Kind   string // "fleet" or "instance"
	Key    string // the fleet's name or the instance's request id
	Have   int64  // the Version the writer sent
	Stored int64  // the stored Version (0: no record stored)
}

func (e *StaleWriteError) Error() string {
	return fmt.Sprintf("gpufleet: stale write of %s %s: written against version %d, the store has %d",
		e.Kind, e.Key, e.Have, e.Stored)
}

// Is answers ErrStaleWrite.
func (e *StaleWriteError) Is(target error) bool { return target == ErrStaleWrite }

// checkVersion returns a *StaleWriteError unless have equals stored.
func checkVersion(kind, key string, have, stored int64) error {
	if have == stored {
		return nil
	}
	return &StaleWriteError{Kind: kind, Key: key, Have: have, Stored: stored}
}

// FencedError is the error of a write refused by its lease.
type FencedError struct {
	Lease string // the lease name guarding the record
	Token int64  // the token the writer acted under (0: its context carried no lease of that name)
	Newer int64  // the newest token of that name in the store (0: none was ever acquired)
}

func (e *FencedError) Error() string {
	if e.Token == 0 {
		return fmt.Sprintf("gpufleet: write fenced: the writer holds no lease %q", e.Lease)
	}
	return fmt.Sprintf("gpufleet: write fenced: lease %q token %d is superseded by token %d", e.Lease, e.Token, e.Newer)
}

// Is answers ErrFenced.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// LeaseHeldError is the error of an AcquireLease refused because another
// holder's lease is unexpired.
type LeaseHeldError struct {
	Name    string
	Holder  string    // the current holder
	Expires time.Time // by the store's clock
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("gpufleet: lease %q is held by %q until %s (store clock)", e.Name, e.Holder, e.Expires.Format(time.RFC3339Nano))
}

// Is answers ErrLeaseHeld.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// Lease is a named, expiring right to act, as a LeaseStore grants it.
type Lease struct {
	Name   string // FleetLease(fleet) for a fleet's records; any other name for other work
	Holder string // who holds it: one id per replica process (with a per-process suffix for "replica/<id>")
	// Token is the fencing token: it grows with every acquisition that
	// changes the holder or follows an expiry, never repeats for a name,
	// and renewals keep it. Writes under a lease carry it.
	Token int64
	// Expires is the end of the lease by the store's clock. Holders must
	// not compare it with their own clock: they count TTL from before the
	// call that acquired or renewed the lease.
	Expires time.Time
	TTL     time.Duration // the duration asked for, kept for renewals
}

// FleetLease returns the name of the lease that guards fleet's records
// ("fleet/" + fleet): every write of the fleet's record and of the records
// of instances whose Instance.Fleet is fleet is checked against it.
func FleetLease(fleet string) string { return "fleet/" + fleet }

// IntentKind is what an Intent asks for.
type IntentKind string

// Intent kinds, one per Manager method that records one.
const (
	IntentApply   IntentKind = "apply"   // Apply: Spec
	IntentDelete  IntentKind = "delete"  // Delete: Policy
	IntentRelease IntentKind = "release" // Release: InstanceID, Policy
	IntentBusy    IntentKind = "busy"    // MarkBusy: InstanceID
	IntentIdle    IntentKind = "idle"    // MarkIdle: InstanceID; GiveBack: InstanceID, Acquire (the hand-out given back)
	// IntentVoid voids the busy mark (IntentBusy) recorded by an Acquire
	// that answered an error: InstanceID, and the mark's Acquire token. The
	// holder carrying it out puts the node back to idle when its busy mark
	// came from that token (InstanceRecord.AcquiredBy), and skips that mark
	// outright when it comes to it later (FleetRecord.Voided).
	IntentVoid IntentKind = "void"
)

// Intent is a caller's request recorded in a LeaseStore so that the
// replica holding the fleet's lease carries it out, whichever replica the
// caller asked.
type Intent struct {
	Seq        int64 // set by the store: increasing, in the order intents were put
	Fleet      string
	Kind       IntentKind
	Spec       Spec          // IntentApply; stored without its PrivateKey
	KeyGiven   bool          // IntentApply: the caller's Spec had a PrivateKey (which is never stored)
	InstanceID string        // request id of the instance (release, busy, idle)
	Policy     ReleasePolicy // release policy override (delete, release); "" for none
	At         time.Time     // when it was recorded, by the recording replica's clock
	// Acquire is, on an IntentBusy that Acquire recorded, a token drawn for
	// that call: when Acquire answers an error after the write (its answer
	// lost and the read-back failed, or the lease lost meanwhile), nothing
	// was handed out, and the mark, should the store have it, is voided by
	// an IntentVoid carrying the same token (the node would otherwise stay
	// busy with no job, for ever). On an IntentBusy it is also the
	// hand-out's token (Instance.HandOut). On an IntentIdle that GiveBack
	// recorded it is the token of the hand-out given back: the holder
	// carries the mark out only while the node's hand-out
	// (InstanceRecord.HandOut) is that one.
	Acquire string `json:",omitempty"`
	// Call is a token drawn for the call that recorded the intent: after a
	// write that answered an error, the recording replica looks for it
	// among the fleet's pending intents (the answer may have been lost
	// while the store committed the write).
	Call string `json:",omitempty"`
}

// LeaseStore is a Store that several Manager replicas share: it grants
// leases with fencing tokens, fences writes, and keeps intents until the
// replica holding their fleet has carried them out.
//
// Fencing: a write (PutFleet, DeleteFleet, PutInstance, DeleteInstance,
// AckIntents) whose context carries leases (WithLease) is checked, in the
// same atomic step as the write, against the lease FleetLease(fleet) of the
// record's fleet: it is refused with an error answering ErrFenced when the
// context carries no lease of that name or when the store has granted a
// newer token for it. A write under an expired lease that nobody acquired
// since still succeeds: nobody else can have written under that name. A
// write whose context carries no lease is not fenced (one Manager alone).
// Meta writes are never fenced.
//
// How a Manager replica (Config.ReplicaID) uses it: every replica has a
// unique holder id and keeps a lease "replica/<holder>" renewed as the sign
// that it is alive; that lease's Holder is the id and a random suffix drawn
// per process, so that a second live process with the same id is refused
// it and takes nothing (see ReplicaIDInUseError). At every pass it
// lists the live leases, takes the set of fleets (Fleets and pending
// Intents) and, by rendezvous hashing of fleet name and holder over the
// live replicas, tries to acquire FleetLease(f) for the fleets that fall
// to it (refused while another holder's lease is unexpired), renews those
// it holds every TTL/3, and releases, after a flush, those that fall to
// another live replica. When it acquires a fleet it reads the fleet's
// records and pending intents from the store; it writes them only under
// WithLease. Before starting any provider call for a fleet it checks that
// the lease is still valid by its own clock (TTL counted from before the
// acquiring or renewing call, less a margin), and it writes the call's
// record (the pending instance before a create) under the lease first: a
// refused write means the lease is lost, and the call is not made. A
// replica that loses a lease (renewal refused, or ErrFenced or
// ErrStaleWrite on a write) drops the fleet's records from memory and
// forgets the results of its calls under way for that fleet. A replica
// that dies stops renewing; within the TTL its leases expire and the
// replicas that the hashing now picks acquire them with newer tokens, read
// the records its last successful writes left, and resolve its creates in
// flight by label. Work without a fleet (orphans, VPC and SSH key
// collection) belongs to the holder of one more lease, and is decided
// against the store's fleets, not a replica's own. The orphans' instance
// records are written and deleted by that holder under a context without
// leases (no fleet's lease covers them; their Version guards the writes),
// and read by the replica that takes the lease over.
type LeaseStore interface {
	Store
	// AcquireLease grants the lease name to holder for ttl (> 0) by the
	// store's clock when it is free, expired, or already holder's; the
	// token grows unless holder renews its own unexpired lease. A lease
	// held by another holder and unexpired gives a *LeaseHeldError.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error)
	// RenewLease extends l by l.TTL from now (store clock) while l is
	// still the unexpired lease of its name; otherwise ErrLeaseLost.
	RenewLease(ctx context.Context, l Lease) (Lease, error)
	// ReleaseLease ends l at once when it is still the current lease of
	// its name; releasing a lease already lost is not an error. The token
	// is kept: the next acquisition gets a newer one.
	ReleaseLease(ctx context.Context, l Lease) error
	// Leases returns the unexpired leases (store clock), by name.
	Leases(ctx context.Context) ([]Lease, error)
	// PutIntent records an intent (never fenced) and returns its Seq.
	PutIntent(ctx context.Context, in Intent) (int64, error)
	// Intents returns the pending intents of fleet ("" for every fleet),
	// by Seq.
	Intents(ctx context.Context, fleet string) ([]Intent, error)
	// AckIntents forgets fleet's intents up to and including Seq through,
	// once their effect is stored. Fenced like a write of fleet's records.
	AckIntents(ctx context.Context, fleet string, through int64) error
}

type leaseKey struct{}

// WithLease returns a context carrying l besides the leases ctx already
// carries (one per name; l replaces an earlier one of its name). A
// LeaseStore fences every write made with it (see LeaseStore).
func WithLease(ctx context.Context, l Lease) context.Context {
	old, _ := ctx.Value(leaseKey{}).(map[string]int64)
	m := make(map[string]int64, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[l.Name] = l.Token
	return context.WithValue(ctx, leaseKey{}, m)
}

// FenceToken says how a LeaseStore must check a write guarded by the lease
// name under ctx: fenced false means ctx carries no lease and the write is
// not checked; otherwise the write is allowed only when token is non-zero
// and is the newest token the store granted for name.
func FenceToken(ctx context.Context, name string) (token int64, fenced bool) {
	m, ok := ctx.Value(leaseKey{}).(map[string]int64)
	if !ok {
		return 0, false
	}
	return m[name], true
}
