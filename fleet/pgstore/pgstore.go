// Package pgstore is a fleet.LeaseStore on PostgreSQL (through pgx), for
// one Manager that must survive restarts or for several Manager replicas
// sharing one database.
//
// The package creates and migrates its own tables inside one schema
// (default "gpufleet"): versioned SQL (Structured Query Language)
// migrations embedded in the binary, applied in one transaction under a
// PostgreSQL advisory lock and recorded in the schema's schema_migrations
// table, so that any number of processes may open the same schema at once.
// A schema migrated by a newer build is accepted: migrations only ever add.
//
// Records are stored as JSON (jsonb) beside a version column. PutFleet and
// PutInstance write only when the record's Version is the stored one (see
// fleet.Store) and return a *fleet.StaleWriteError otherwise. A write whose
// context carries leases (fleet.WithLease) is checked against the lease of
// the record's fleet in the same statement, which holds a share lock on
// the lease's row until it commits: an acquisition of that lease waits for
// the write, and a write waits for an acquisition under way and is then
// refused (*fleet.FencedError). Lease expiry is computed by the database's
// clock (now()), never by a replica's.
//
// Besides fleet.LeaseStore, a Store is a fleet.RecordFinder (one record
// by request id, provider id or fleet name, through indexes) and a
// fleet.MetaCreator (a value stored only when none is, atomically).
//
// Every call that fails because the database cannot be reached answers
// errors.Is(err, ErrUnreachable), with the cause in the chain; no error
// holds the connection string's password.
//
// Offer.ProviderData comes back as its JSON decoding (a map), not as the
// provider's own type: stored records are never used to create again.
// Private keys are never stored (see fleet.PrivateKey).
//
// The role needs the right to create a schema in the database (or the
// schema must exist and be the role's).
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gpufleet/gpufleet/fleet"
)

// ErrStale is returned (wrapped in a *fleet.StaleWriteError) by a refused
// conditional write; it is fleet.ErrStaleWrite.
var ErrStale = fleet.ErrStaleWrite

// ErrFenced is returned (wrapped in a *fleet.FencedError) by a write made
// under a superseded lease; it is fleet.ErrFenced.
var ErrFenced = fleet.ErrFenced

// DefaultSchema is the schema the tables live in unless WithSchema says.
const DefaultSchema = "gpufleet"

// DefaultTimeout bounds each call whose context has no deadline.
const DefaultTimeout = 30 * time.Second

// Store is a fleet.LeaseStore on PostgreSQL. Safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	owned   bool // Close closes the pool
	schema  string
	timeout time.Duration
	q       queries
}

var (
	_ fleet.LeaseStore  = (*Store)(nil)
	_ fleet.MetaCreator = (*Store)(nil)
)

type options struct {
	schema  string
	timeout time.Duration
}

// Option tunes Open and New.
type Option func(*options)

// WithSchema puts the tables in schema name (1 to 63 characters of
// [a-z0-9_], not starting with a digit), created when missing. Stores with
// different schemas in one database are independent.
func WithSchema(name string) Option { return func(o *options) { o.schema = name } }

// WithTimeout bounds each call whose context carries no deadline
// (default DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects to the database that dsn names (a PostgreSQL URL or
// key=value string; a connect timeout of 10 s applies unless it sets one),
// creates or migrates the schema, and returns the Store; Close closes its
// connections. Errors: an invalid dsn (named by what is wrong, without the
// connection string) or option, ErrUnreachable when no connection could
// be made, a failed migration.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parsing the connection string: %s", withoutConnString(err))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	s, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a Store on pool (which the caller keeps and closes), after
// creating or migrating the schema. Errors: an invalid option,
// ErrUnreachable, a failed migration.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	o := options{schema: DefaultSchema, timeout: DefaultTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if !schemaName.MatchString(o.schema) {
		return nil, fmt.Errorf("pgstore: invalid schema name %q", o.schema)
	}
	if o.timeout <= 0 {
		return nil, errors.New("pgstore: the timeout must be positive")
	}
	s := &Store{pool: pool, schema: o.schema, timeout: o.timeout, q: newQueries(o.schema)}
	pctx, cancel := s.bound(ctx)
	err := pool.Ping(pctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Close closes the connections Open made; it does nothing for a Store
// made by New.
func (s *Store) Close() {
	if s.owned {
		s.pool.Close()
	}
}

// withoutConnString is the text of a connection string's parse error
// without the connection string, which the parser masks only as far as it
// can find the password: "invalid port", not "cannot parse `...`: invalid
// port".
func withoutConnString(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		return msg[i+len("`: "):]
	}
	return "invalid"
}

// Schema returns the schema the tables live in.
func (s *Store) Schema() string { return s.schema }

// bound gives ctx the Store's timeout when it has no deadline.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}

// ident quotes a name for SQL.
func ident(parts ...string) string { return pgx.Identifier(parts).Sanitize() }

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
