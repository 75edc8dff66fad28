package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gpufleet/gpufleet/fleet"
)

// AcquireLease grants name to holder for ttl (at least a microsecond) by
// the database's clock when the lease is free, expired or already
// holder's; the token grows unless holder renews its own unexpired lease.
// Errors: *fleet.LeaseHeldError (fleet.ErrLeaseHeld) while another
// holder's lease is unexpired; an invalid argument; a database error.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (fleet.Lease, error) {
	if name == "" || holder == "" || ttl < time.Microsecond {
		return fleet.Lease{}, errors.New("pgstore: a lease needs a name, a holder and a TTL of at least 1µs")
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	l, err := scanLease(s.pool.QueryRow(ctx, s.q.acquire, name, holder, ttl.Microseconds()))
	if !errors.Is(err, pgx.ErrNoRows) {
		if err != nil {
			return fleet.Lease{}, fail(err, "acquiring lease %s", name)
		}
		return l, nil
	}
	held := &fleet.LeaseHeldError{Name: name}
	if err := s.pool.QueryRow(ctx, s.q.holder, name).Scan(&held.Holder, &held.Expires); err != nil {
		return fleet.Lease{}, fail(err, "acquiring lease %s: held, and reading by whom failed", name)
	}
	return fleet.Lease{}, held
}

// RenewLease extends l by l.TTL from now (database clock) while l is the
// unexpired lease of its name; otherwise an error answering
// fleet.ErrLeaseLost.
func (s *Store) RenewLease(ctx context.Context, l fleet.Lease) (fleet.Lease, error) {
	if l.TTL < time.Microsecond {
		return fleet.Lease{}, errors.New("pgstore: a lease needs a TTL of at least 1µs")
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	out, err := scanLease(s.pool.QueryRow(ctx, s.q.renew, l.Name, l.Holder, l.Token, l.TTL.Microseconds()))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fleet.Lease{}, fmt.Errorf("%w: %q token %d", fleet.ErrLeaseLost, l.Name, l.Token)
	case err != nil:
		return fleet.Lease{}, fail(err, "renewing lease %s", l.Name)
	}
	return out, nil
}

// ReleaseLease ends l at once when it is still the current lease of its
// name; releasing a lease already lost is not an error. The token is kept.
func (s *Store) ReleaseLease(ctx context.Context, l fleet.Lease) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, s.q.release, l.Name, l.Holder, l.Token); err != nil {
		return fail(err, "releasing lease %s", l.Name)
	}
	return nil
}

// Leases returns the unexpired leases (database clock), by name.
func (s *Store) Leases(ctx context.Context) ([]fleet.Lease, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, s.q.leases)
	if err != nil {
		return nil, fail(err, "reading leases")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (fleet.Lease, error) { return scanLease(r) })
	if err != nil {
		return nil, fail(err, "reading leases")
	}
	slices.SortFunc(out, func(a, b fleet.Lease) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func scanLease(row pgx.Row) (fleet.Lease, error) {
	var l fleet.Lease
	var ttl int64
	if err := row.Scan(&l.Name, &l.Holder, &l.Token, &l.Expires, &ttl); err != nil {
		return fleet.Lease{}, err
	}
	l.TTL = time.Duration(ttl) * time.Microsecond
	return l, nil
}
