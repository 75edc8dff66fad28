package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gpufleet/gpufleet/fleet"
)

var (
	_ fleet.RecordFinder        = (*Store)(nil)
	_ fleet.IntentTailReader    = (*Store)(nil)
	_ fleet.ReleaseIntentReader = (*Store)(nil)
)

// Instance returns the instance record that id names, with its Version:
// the record whose request id is id, else the one fleet.PickInstance picks
// of those whose provider id is id (fleet.RecordFinder). It reads the
// records that match, through indexes, not the whole table. Errors: one
// answering fleet.ErrNotFound when none matches; a database error
// (ErrUnreachable when the database cannot be reached).
func (s *Store) Instance(ctx context.Context, id string) (fleet.InstanceRecord, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var recs []fleet.InstanceRecord
	if id != "" {
		rows, err := s.pool.Query(ctx, s.q.instanceByID, id)
		if err != nil {
			return fleet.InstanceRecord{}, fail(err, "reading instance %s", id)
		}
		recs, err = collect(rows, func(r *fleet.InstanceRecord, v int64) { r.Version = v })
		if err != nil {
			return fleet.InstanceRecord{}, fail(err, "reading instance %s", id)
		}
	}
	r, ok := fleet.PickInstance(recs, id)
	if !ok {
		return fleet.InstanceRecord{}, fmt.Errorf("pgstore: instance %q: %w", id, fleet.ErrNotFound)
	}
	return r, nil
}

// Fleet returns the record of the fleet named name, with its Version
// (fleet.RecordFinder). Errors: one answering fleet.ErrNotFound when there
// is none; a database error (ErrUnreachable when the database cannot be
// reached).
func (s *Store) Fleet(ctx context.Context, name string) (fleet.FleetRecord, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var f fleet.FleetRecord
	var version int64
	var data []byte
	err := s.pool.QueryRow(ctx, s.q.fleets.one, name).Scan(&version, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return fleet.FleetRecord{}, fmt.Errorf("pgstore: fleet %q: %w", name, fleet.ErrNotFound)
	}
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err != nil {
		return fleet.FleetRecord{}, fail(err, "reading fleet %s", name)
	}
	f.Version = version
	return f, nil
}
