package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/stretchr/testify/require"
)

// connect opens a plain connection, closed when t ends.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// A connection string naming no running server fails Open with
// ErrUnreachable (not a migration error), with the password kept out.
func TestOpenWithoutAServerSaysUnreachable(t *testing.T) {
	_, err := pgstore.Open(t.Context(), "postgres://gpufleet:s3cret-pw@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2")
	require.ErrorIs(t, err, pgstore.ErrUnreachable)
	require.NotContains(t, err.Error(), "migrating")
	require.NotContains(t, err.Error(), "s3cret-pw")
}
