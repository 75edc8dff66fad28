package pgstore_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/internal/pgtest"
)

// openAtOnce opens a Store on each of schemas at the same moment and
// returns them (closed when t ends) or fails t.
func openAtOnce(t *testing.T, dsn string, schemas []string) []*pgstore.Store {
	t.Helper()
	stores, errs := make([]*pgstore.Store, len(schemas)), make([]error, len(schemas))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, schema := range schemas {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
		})
	}
	close(start)
	wg.Wait()
	for i := range schemas {
		require.NoError(t, errs[i], "open %d of schema %s", i, schemas[i])
		t.Cleanup(stores[i].Close)
	}
	return stores
}

// recorded returns the migration versions recorded in schema.
func recorded(t *testing.T, conn *pgx.Conn, schema string) []int {
	t.Helper()
	rows, err := conn.Query(t.Context(), "SELECT version FROM "+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+" ORDER BY version")
	require.NoError(t, err)
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	return vs
}

// A schema written by an older build (before migration 3) opened by
// several newer processes at once is upgraded once: each waits for the
// schema's advisory lock and the later ones find nothing to do.
func TestConcurrentOpenUpgradesOnce(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn := connect(t, dsn)
	for round := range 3 {
		schema := pgtest.Schema(t, dsn)
		s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
		require.NoError(t, err)
		s.Close()
		_, err = conn.Exec(t.Context(), fmt.Sprintf("DROP INDEX %s; DELETE FROM %s WHERE version = 3",
			pgx.Identifier{schema, "instances_provider_id"}.Sanitize(), pgx.Identifier{schema, "schema_migrations"}.Sanitize()))
		require.NoError(t, err)
		require.Equal(t, []int{1, 2}, recorded(t, conn, schema), "an older build's schema")

		stores := openAtOnce(t, dsn, []string{schema, schema, schema, schema, schema, schema})
		assert.Equal(t, []int{1, 2, 3}, recorded(t, conn, schema), "round %d: each migration recorded once", round)
		v, err := stores[5].SchemaVersion(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 3, v)
		var indexes int
		require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = 'instances_provider_id'",
			schema).Scan(&indexes))
		assert.Equal(t, 1, indexes, "round %d: the index is back", round)
	}
}

// Processes opening several new schemas at once, a few per schema: every
// open succeeds and each schema is migrated once.
func TestConcurrentOpenOfSeveralSchemas(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn := connect(t, dsn)
	var schemas, opens []string
	for range 4 {
		schema := pgtest.Schema(t, dsn)
		schemas = append(schemas, schema)
		opens = append(opens, schema, schema, schema)
	}
	openAtOnce(t, dsn, opens)
	for _, schema := range schemas {
		assert.Equal(t, []int{1, 2, 3}, recorded(t, conn, schema), schema)
	}
}

// Migration 3 gives the lookup by provider id an index: with 2,000
// records the lookup of one id scans the primary key and that index, not
// the table.
func TestLookupByIDUsesIndexes(t *testing.T) {
	c, last := bigStore(t, 2000)
	conn := connect(t, pgtest.DSN(t))
	_, err := conn.Exec(t.Context(), "ANALYZE "+pgx.Identifier{c.Schema(), "instances"}.Sanitize())
	require.NoError(t, err)
	rows, err := conn.Query(t.Context(), "EXPLAIN "+pgstore.InstanceByIDQuery(c.Store), last.Instance.ID)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	plan := strings.Join(lines, "\n")
	assert.Contains(t, plan, "instances_provider_id", plan)
	assert.Contains(t, plan, "instances_pkey", plan)
	assert.NotContains(t, plan, "Seq Scan", plan)
}
