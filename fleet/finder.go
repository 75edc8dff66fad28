package fleet

import (
	"context"
	"errors"
	"slices"
)

// RecordFinder is an optional Store capability: reading one record by its
// key rather than every record. A Manager that is one of several replicas
// (Config.ReplicaID) uses it, when its Store has it, for the calls about
// one instance or fleet that it does not hold (Release, MarkBusy,
// MarkIdle, Delete, Acquire): without it each such call reads every
// instance record (Instances) or every fleet record (Fleets) to find one.
// MemoryStore, MemoryLeaseStore and fleet/pgstore's Store have it.
type RecordFinder interface {
	// Instance returns the instance record that id names, with its stored
	// Version: the record whose request id is id, else, of the records
	// whose provider id (Instance.ID) is id, the one PickInstance picks
	// (a provider id rented again names its current rental). Terminated
	// records are returned too. Errors: one answering ErrNotFound when no
	// record matches or id is empty; the Store's.
	Instance(ctx context.Context, id string) (InstanceRecord, error)
	// Fleet returns the record of the fleet named name, with its stored
	// Version. Errors: one answering ErrNotFound when there is none; the
	// Store's.
	Fleet(ctx context.Context, name string) (FleetRecord, error)
}

// PickInstance returns the record of recs that a call by id names (ok
// false when none does, or id is empty): the record whose request id is
// id, else, of the records whose provider id is id (a Hot Aisle bare-metal
// server rented again keeps its name), one not terminated before a
// terminated one, then the latest Instance.Created, then the greatest
// request id (byte order). A RecordFinder may read the few records that
// match id and pick with it.
func PickInstance(recs []InstanceRecord, id string) (InstanceRecord, bool) {
	if id == "" {
		return InstanceRecord{}, false
	}
	var found *InstanceRecord
	for i := range recs {
		r := &recs[i]
		if r.Instance.RequestID == id {
			return *r, true
		}
		if r.Instance.ID == id && (found == nil || newerHolder(r, found)) {
			found = r
		}
	}
	if found == nil {
		return InstanceRecord{}, false
	}
	return *found, true
}

// Instance returns the instance record that id names (see RecordFinder).
func (s *MemoryStore) Instance(_ context.Context, id string) (InstanceRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.instances[id]; ok && id != "" {
		return cloneInstance(r), nil
	}
	var match []InstanceRecord
	for reqID := range s.byProvider[id] {
		match = append(match, s.instances[reqID])
	}
	r, ok := PickInstance(match, id)
	if !ok {
		return InstanceRecord{}, classed(ErrNotFound, "instance %q", id)
	}
	return cloneInstance(r), nil
}

// Fleet returns the record of the fleet named name (see RecordFinder).
func (s *MemoryStore) Fleet(_ context.Context, name string) (FleetRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.fleets[name]
	if !ok {
		return FleetRecord{}, classed(ErrNotFound, "fleet %q", name)
	}
	return cloneFleet(f), nil
}

// storedFleetRecord reads one fleet record from the shared store: by name
// when the store is a RecordFinder, else from every record. Replica mode.
func (m *Manager) storedFleetRecord(ctx context.Context, name string) (FleetRecord, error) {
	if rf, ok := m.rep.ls.(RecordFinder); ok {
		return rf.Fleet(ctx, name)
	}
	fleets, err := m.rep.ls.Fleets(ctx)
	if err != nil {
		return FleetRecord{}, err
	}
	if i := slices.IndexFunc(fleets, func(f FleetRecord) bool { return f.Spec.Name == name }); i >= 0 {
		return fleets[i], nil
	}
	return FleetRecord{}, classed(ErrNotFound, "fleet %s", name)
}

// findStoredInstance reads the instance record id names from the shared
// store (see RecordFinder): by id when the store is a RecordFinder, else
// from every record. found is false when none matches. Replica mode.
func (m *Manager) findStoredInstance(ctx context.Context, id string) (rec InstanceRecord, found bool, err error) {
	if rf, ok := m.rep.ls.(RecordFinder); ok {
		rec, err = rf.Instance(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return InstanceRecord{}, false, nil
		}
		return rec, err == nil, err
	}
	recs, err := m.rep.ls.Instances(ctx)
	if err != nil {
		return InstanceRecord{}, false, err
	}
	rec, found = PickInstance(recs, id)
	return rec, found, nil
}

// IntentTailReader is an optional LeaseStore capability: reading only the
// intents of a fleet recorded after a given Seq. The holder of a fleet
// reads back each intent recorded through it before carrying it out; with it
// each read costs the intents not yet carried out rather than every intent
// not yet acknowledged (acknowledgements wait for a flush, every third of
// the lease TTL). MemoryLeaseStore and fleet/pgstore's Store have it.
type IntentTailReader interface {
	// IntentsAfter returns fleet's pending intents whose Seq is greater
	// than after, by Seq. fleet must not be empty. Errors: the store's.
	IntentsAfter(ctx context.Context, fleet string, after int64) ([]Intent, error)
}

// ReleaseIntentReader is an optional LeaseStore capability: reading only
// the pending intents that make an instance as good as released — its
// Release and its fleet's Delete. MarkBusy and MarkIdle on a replica read
// them before recording a mark (a node whose release is recorded is not
// marked); with it that read costs those intents only, not every intent of
// the fleet not yet acknowledged. MemoryLeaseStore and fleet/pgstore's
// Store have it.
type ReleaseIntentReader interface {
	// ReleaseIntents returns fleet's pending intents with a Seq greater
	// than after that are a Delete of fleet or a Release of the instance
	// whose request id is requestID, by Seq. Errors: the store's.
	ReleaseIntents(ctx context.Context, fleet, requestID string, after int64) ([]Intent, error)
}

// ReleaseIntents returns fleet's pending Deletes and Releases of requestID
// after Seq after, by Seq (ReleaseIntentReader).
func (s *MemoryLeaseStore) ReleaseIntents(_ context.Context, fleet, requestID string, after int64) ([]Intent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Intent
	for _, in := range s.intents[s.firstAfter(after):] {
		if in.Fleet == fleet && (in.Kind == IntentDelete || (in.Kind == IntentRelease && in.InstanceID == requestID)) {
			out = append(out, in) // no Spec: nothing to copy
		}
	}
	return out, nil
}
