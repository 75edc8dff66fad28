package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gpufleet/gpufleet/fleet"
)

// Fleets returns every fleet record with its Version, by name (byte order).
func (s *Store) Fleets(ctx context.Context) ([]fleet.FleetRecord, error) {
	out, err := readAll(ctx, s, s.q.fleets, func(f *fleet.FleetRecord, v int64) { f.Version = v })
	slices.SortFunc(out, func(a, b fleet.FleetRecord) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	return out, err
}

// Instances returns every instance record with its Version, oldest first
// (Instance.Created, then request id).
func (s *Store) Instances(ctx context.Context) ([]fleet.InstanceRecord, error) {
	out, err := readAll(ctx, s, s.q.instances, func(r *fleet.InstanceRecord, v int64) { r.Version = v })
	slices.SortFunc(out, func(a, b fleet.InstanceRecord) int {
		if c := a.Instance.Created.Compare(b.Instance.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Instance.RequestID, b.Instance.RequestID)
	})
	return out, err
}

func readAll[R any](ctx context.Context, s *Store, t table, setVersion func(*R, int64)) ([]R, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, t.all)
	if err != nil {
		return nil, fail(err, "reading %s records", t.kind)
	}
	out, err := collect(rows, setVersion)
	if err != nil {
		return nil, fail(err, "reading %s records", t.kind)
	}
	return out, nil
}

// collect decodes rows of (version, data) and closes them.
func collect[R any](rows pgx.Rows, setVersion func(*R, int64)) ([]R, error) {
	var out []R
	var v int64
	var data []byte
	_, err := pgx.ForEachRow(rows, []any{&v, &data}, func() error {
		var r R
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		setVersion(&r, v)
		out = append(out, r)
		return nil
	})
	return out, err
}

// PutFleet stores f when f.Version is the stored one's (0: none stored);
// the stored record then has Version+1. Errors: *fleet.StaleWriteError
// (ErrStale) when the version differs, *fleet.FencedError (ErrFenced) when
// ctx carries leases and not the newest fleet.FleetLease(f.Spec.Name).
func (s *Store) PutFleet(ctx context.Context, f fleet.FleetRecord) error {
	version := f.Version
	f.Version = 0
	return s.put(ctx, s.q.fleets, f.Spec.Name, f.Spec.Name, version, f)
}

// PutInstance stores r under its request id, conditionally and fenced by
// fleet.FleetLease(r.Instance.Fleet) as PutFleet.
func (s *Store) PutInstance(ctx context.Context, r fleet.InstanceRecord) error {
	version := r.Version
	r.Version = 0
	return s.put(ctx, s.q.instances, r.Instance.RequestID, r.Instance.Fleet, version, r)
}

func (s *Store) put(ctx context.Context, t table, id, fleetName string, version int64, rec any) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fail(err, "encoding %s %s", t.kind, id)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	lease := fleet.FleetLease(fleetName)
	token, fenced := fleet.FenceToken(ctx, lease)
	args := []any{id, fleetName, data}
	if version != 0 {
		args = append(args, version)
	}
	if fenced {
		args = append(args, lease, token)
	}
	var sql string
	switch {
	case version == 0 && !fenced:
		sql = t.insert
	case version == 0:
		sql = t.insertFenced
	case !fenced:
		sql = t.update
	default:
		sql = t.updateFenced
	}
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return fail(err, "writing %s %s", t.kind, id)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return s.refused(ctx, t, id, version, lease, token, fenced)
}

// refused says why a write changed no row: a superseded lease, else a
// stale version.
func (s *Store) refused(ctx context.Context, t table, id string, version int64, lease string, token int64, fenced bool) error {
	var stored, newest *int64
	if err := s.pool.QueryRow(ctx, t.diagnose, id, lease).Scan(&stored, &newest); err != nil {
		return fail(err, "writing %s %s: refused, and reading why failed", t.kind, id)
	}
	if err := fenceError(lease, token, fenced, newest); err != nil {
		return err
	}
	return &fleet.StaleWriteError{Kind: t.kind, Key: id, Have: version, Stored: deref(stored)}
}

// fenceError is the error of a fenced write whose lease's newest token is
// newest (nil: never acquired), or nil when the write was not fenced out.
func fenceError(lease string, token int64, fenced bool, newest *int64) error {
	if fenced && (token == 0 || token != deref(newest)) {
		return &fleet.FencedError{Lease: lease, Token: token, Newer: deref(newest)}
	}
	return nil
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// DeleteFleet forgets a fleet; an absent one is not an error. Fenced by
// fleet.FleetLease(name) (*fleet.FencedError).
func (s *Store) DeleteFleet(ctx context.Context, name string) error {
	return s.remove(ctx, s.q.fleets, name, name)
}

// DeleteInstance forgets an instance record; an absent one is not an
// error. Fenced by the lease of the stored record's fleet.
func (s *Store) DeleteInstance(ctx context.Context, requestID string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var fleetName string
	err := s.pool.QueryRow(ctx, s.q.instances.fleetOf, requestID).Scan(&fleetName)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fail(err, "deleting instance %s", requestID)
	}
	return s.remove(ctx, s.q.instances, requestID, fleetName)
}

func (s *Store) remove(ctx context.Context, t table, id, fleetName string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	lease := fleet.FleetLease(fleetName)
	token, fenced := fleet.FenceToken(ctx, lease)
	if !fenced {
		if _, err := s.pool.Exec(ctx, t.remove, id); err != nil {
			return fail(err, "deleting %s %s", t.kind, id)
		}
		return nil
	}
	tag, err := s.pool.Exec(ctx, t.removeFenced, id, lease, token, fleetName)
	if err != nil {
		return fail(err, "deleting %s %s", t.kind, id)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return s.checkFence(ctx, lease, token)
}

// checkFence returns a *fleet.FencedError when token is not the newest of
// lease, after a fenced statement changed nothing.
func (s *Store) checkFence(ctx context.Context, lease string, token int64) error {
	var newest *int64
	err := s.pool.QueryRow(ctx, s.q.token, lease).Scan(&newest)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fail(err, "reading lease %s", lease)
	}
	return fenceError(lease, token, true, newest)
}

// Meta reads a named value (ok false when absent).
func (s *Store) Meta(ctx context.Context, key string) (string, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var v string
	err := s.pool.QueryRow(ctx, s.q.meta, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fail(err, "reading %s", key)
	}
	return v, true, nil
}

// PutMeta stores a named value (never fenced).
func (s *Store) PutMeta(ctx context.Context, key, value string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, s.q.putMeta, key, value); err != nil {
		return fail(err, "writing %s", key)
	}
	return nil
}

// CreateMeta stores value under key when key holds none, atomically, and
// returns the value key holds afterwards: value, or the one stored before
// (fleet.MetaCreator). Of callers racing on one key, the first to commit
// wins and every other gets its value.
func (s *Store) CreateMeta(ctx context.Context, key, value string) (string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var stored string
	if err := s.pool.QueryRow(ctx, s.q.createMeta, key, value).Scan(&stored); err != nil {
		return "", fail(err, "creating %s", key)
	}
	return stored, nil
}
