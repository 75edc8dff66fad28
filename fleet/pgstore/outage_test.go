package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/fleet/storetest"
	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// everyCall is one call of each Store method on s; l is a lease of fleet
// "u" that s granted.
func everyCall(s *pgstore.Store, l fleet.Lease) map[string]func(ctx context.Context) error {
	return map[string]func(ctx context.Context) error{
		"Fleets":    func(ctx context.Context) error { _, err := s.Fleets(ctx); return err },
		"Instances": func(ctx context.Context) error { _, err := s.Instances(ctx); return err },
		"Fleet":     func(ctx context.Context) error { _, err := s.Fleet(ctx, "u"); return err },
		"Instance":  func(ctx context.Context) error { _, err := s.Instance(ctx, "req1"); return err },
		"PutFleet": func(ctx context.Context) error {
			f := storetest.Fleet("u")
			f.Version = 1
			return s.PutFleet(fleet.WithLease(ctx, l), f)
		},
		"PutInstance": func(ctx context.Context) error {
			return s.PutInstance(ctx, storetest.Instance("u", "req1", time.Now()))
		},
		"DeleteFleet":    func(ctx context.Context) error { return s.DeleteFleet(fleet.WithLease(ctx, l), "u") },
		"DeleteInstance": func(ctx context.Context) error { return s.DeleteInstance(ctx, "req1") },
		"AcquireLease": func(ctx context.Context) error {
			_, err := s.AcquireLease(ctx, "other", "r", time.Minute)
			return err
		},
		"RenewLease": func(ctx context.Context) error { _, err := s.RenewLease(ctx, l); return err },
		"ReleaseLease": func(ctx context.Context) error {
			return s.ReleaseLease(ctx, fleet.Lease{Name: "x", Holder: "r", Token: 1})
		},
		"Leases": func(ctx context.Context) error { _, err := s.Leases(ctx); return err },
		"PutIntent": func(ctx context.Context) error {
			_, err := s.PutIntent(ctx, fleet.Intent{Fleet: "u", Kind: fleet.IntentDelete})
			return err
		},
		"Intents":       func(ctx context.Context) error { _, err := s.Intents(ctx, ""); return err },
		"AckIntents":    func(ctx context.Context) error { return s.AckIntents(fleet.WithLease(ctx, l), "u", 1) },
		"Meta":          func(ctx context.Context) error { _, _, err := s.Meta(ctx, "k"); return err },
		"PutMeta":       func(ctx context.Context) error { return s.PutMeta(ctx, "k", "v") },
		"CreateMeta":    func(ctx context.Context) error { _, err := s.CreateMeta(ctx, "k", "v"); return err },
		"SchemaVersion": func(ctx context.Context) error { _, err := s.SchemaVersion(ctx); return err },
	}
}

// unreachableStore opens a Store through a proxy with a short timeout,
// stores fleet "u" and grants its lease.
func unreachableStore(t *testing.T, dsn string) (*pgstore.Store, *cutProxy, fleet.Lease) {
	t.Helper()
	schema := pgtest.Schema(t, dsn)
	p, pdsn := newCutProxy(t, dsn)
	s, err := pgstore.Open(t.Context(), pdsn, pgstore.WithSchema(schema), pgstore.WithTimeout(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.NoError(t, s.PutFleet(t.Context(), storetest.Fleet("u")))
	l, err := s.AcquireLease(t.Context(), fleet.FleetLease("u"), "r", time.Minute)
	require.NoError(t, err)
	return s, p, l
}

// requireUnreachable checks the error of a call made while the database
// cannot be reached.
func requireUnreachable(t *testing.T, name string, err error, took time.Duration) {
	t.Helper()
	require.Error(t, err, name)
	assert.Less(t, took, 5*time.Second, "%s: bounded by the Store's timeout", name)
	assert.ErrorIs(t, err, pgstore.ErrUnreachable, "%s while the database is unreachable: %v", name, err)
	assert.Contains(t, err.Error(), "the database cannot be reached", name)
	assert.False(t, errors.Is(err, fleet.ErrStaleWrite) || errors.Is(err, fleet.ErrFenced) ||
		errors.Is(err, fleet.ErrLeaseLost) || errors.Is(err, fleet.ErrNotFound),
		"%s: an outage is not a stale write, a fence, a lost lease or a missing record: %v", name, err)
}

// While the database cannot be reached, every Store call fails within its
// timeout with an error answering pgstore.ErrUnreachable, so that an
// orchestrator can tell "the database is down, retry" from "your write
// was stale" or "your lease was taken"; before, only Open and New wrapped
// it, and every other call returned an untyped "failed to connect ...
// connection refused". Once the database is back, the same Store works
// again without being reopened.
func TestStoreCallsWhileUnreachable(t *testing.T) {
	s, p, l := unreachableStore(t, pgtest.DSN(t))
	p.cut()
	for name, call := range everyCall(s, l) {
		start := time.Now()
		err := call(context.Background())
		requireUnreachable(t, name, err, time.Since(start))
	}

	p.restore(t)
	fs, err := s.Fleets(t.Context())
	require.NoError(t, err, "the same Store works again once the database is back")
	require.Len(t, fs, 1)
	_, err = s.RenewLease(t.Context(), l)
	require.NoError(t, err, "the lease outlived a short outage")
}
