package pgstore

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded file, "NNNN_name.sql", applied once per schema.
type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	entries, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, path := range entries {
		base := strings.TrimSuffix(strings.TrimPrefix(path, "migrations/"), ".sql")
		num, name, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("pgstore: migration %s: no version number", path)
		}
		body, err := migrationFiles.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(body)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// lockKey is the advisory lock that serialises the migrations of schema.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("gpufleet/pgstore migrate " + schema))
	return int64(h.Sum64())
}

// migrate creates the schema and applies the migrations it lacks, in one
// transaction under the schema's advisory lock: processes that start at
// once wait for each other, and the later ones find nothing to do.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fail(err, "migrating schema %s", s.schema)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it does nothing
	schema, table := ident(s.schema), ident(s.schema, "schema_migrations")
	for _, sql := range []string{
		fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", lockKey(s.schema)),
		"CREATE SCHEMA IF NOT EXISTS " + schema,
		"SET LOCAL search_path TO " + schema,
		"CREATE TABLE IF NOT EXISTS " + table + ` (version integer PRIMARY KEY, name text NOT NULL,
			applied timestamptz NOT NULL DEFAULT now())`,
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fail(err, "migrating schema %s", s.schema)
		}
	}
	rows, err := tx.Query(ctx, "SELECT version FROM "+table)
	if err != nil {
		return fail(err, "migrating schema %s", s.schema)
	}
	applied := map[int]bool{}
	var v int
	for rows.Next() {
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fail(err, "migrating schema %s", s.schema)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return fail(err, "migrating schema %s", s.schema)
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fail(err, "migration %d (%s) of schema %s", m.version, m.name, s.schema)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+table+" (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return fail(err, "migration %d of schema %s", m.version, s.schema)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fail(err, "migrating schema %s", s.schema)
	}
	return nil
}

// SchemaVersion returns the highest migration applied to the Store's
// schema.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var v int
	err := s.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+ident(s.schema, "schema_migrations")).Scan(&v)
	if err != nil {
		return 0, fail(err, "reading the schema version")
	}
	return v, nil
}
