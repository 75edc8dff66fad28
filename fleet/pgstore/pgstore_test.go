package pgstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/fleet/storetest"
	"github.com/gpufleet/gpufleet/internal/pgtest"
)

// open returns a Store on a schema of t's own.
func open(t *testing.T) *pgstore.Store {
	t.Helper()
	dsn := pgtest.DSN(t)
	s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(pgtest.Schema(t, dsn)))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) fleet.Store { return open(t) })
}

// Leases expire by the database's clock: a TTL of 1 ms has passed after a
// wait of 2 ms on the same machine.
func TestLeaseStoreContract(t *testing.T) {
	storetest.RunLeases(t, storetest.LeaseHarness{
		New:   func(t *testing.T) fleet.LeaseStore { return open(t) },
		Short: time.Millisecond,
		Wait:  time.Sleep,
	})
}

// Processes opening one schema at once migrate it once; opening again
// changes nothing.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	const n = 6
	stores := make([]*pgstore.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema)) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		defer stores[i].Close()
	}
	v, err := stores[0].SchemaVersion(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 3, v)
	require.NoError(t, stores[0].PutMeta(t.Context(), "k", "v"))

	again, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
	require.NoError(t, err)
	defer again.Close()
	got, ok, err := again.Meta(t.Context(), "k")
	require.NoError(t, err)
	assert.True(t, ok && got == "v", "reopening keeps the data")

	var rows int
	conn := connect(t, dsn)
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM "+schema+".schema_migrations").Scan(&rows))
	assert.Equal(t, 3, rows, "each migration recorded once")
}

// Two schemas in one database are independent stores.
func TestSchemasAreIndependent(t *testing.T) {
	a, b := open(t), open(t)
	require.NoError(t, a.PutFleet(t.Context(), storetest.Fleet("alpha")))
	fs, err := b.Fleets(t.Context())
	require.NoError(t, err)
	assert.Empty(t, fs)
	require.NoError(t, b.PutFleet(t.Context(), storetest.Fleet("alpha")), "version 0 in the other schema")
}

func TestInvalidOptionsAreRefused(t *testing.T) {
	_, err := pgstore.Open(t.Context(), "postgres://127.0.0.1:1/x", pgstore.WithSchema("Bad-Name"))
	require.ErrorContains(t, err, "invalid schema name")
	_, err = pgstore.Open(t.Context(), "::not a dsn::")
	require.Error(t, err)
	_, err = pgstore.Open(t.Context(), "postgres://127.0.0.1:1/x", pgstore.WithTimeout(-1))
	require.Error(t, err)
}

// The typed errors answer the package's names and the fleet's.
func TestErrorsAnswerBothNames(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	require.NoError(t, s.PutFleet(ctx, storetest.Fleet("alpha")))
	err := s.PutFleet(ctx, storetest.Fleet("alpha"))
	require.ErrorIs(t, err, pgstore.ErrStale)
	require.ErrorIs(t, err, fleet.ErrStaleWrite)

	l, err := s.AcquireLease(ctx, fleet.FleetLease("alpha"), "r1", time.Hour)
	require.NoError(t, err)
	require.NoError(t, s.ReleaseLease(ctx, l))
	_, err = s.AcquireLease(ctx, fleet.FleetLease("alpha"), "r2", time.Hour)
	require.NoError(t, err)
	f := storetest.Fleet("alpha")
	f.Version = 1
	err = s.PutFleet(fleet.WithLease(ctx, l), f)
	require.ErrorIs(t, err, pgstore.ErrFenced)
	require.ErrorIs(t, err, fleet.ErrFenced)
}

// A call without a deadline gets the Store's timeout.
func TestCallsWithoutDeadlineAreBounded(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // the migration runs under this deadline
	defer cancel()
	s, err := pgstore.Open(ctx, dsn, pgstore.WithSchema(pgtest.Schema(t, dsn)), pgstore.WithTimeout(50*time.Millisecond))
	require.NoError(t, err)
	defer s.Close()
	// Hold the lease row's lock in another transaction: the fenced write waits for it.
	l, err := s.AcquireLease(t.Context(), fleet.FleetLease("alpha"), "r1", time.Hour)
	require.NoError(t, err)
	conn := connect(t, dsn)
	tx, err := conn.Begin(t.Context())
	require.NoError(t, err)
	defer tx.Rollback(context.Background()) //nolint:errcheck
	_, err = tx.Exec(t.Context(), "SELECT 1 FROM "+s.Schema()+".leases FOR UPDATE")
	require.NoError(t, err)
	err = s.PutFleet(fleet.WithLease(context.Background(), l), storetest.Fleet("alpha"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
