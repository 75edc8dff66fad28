package pgstore_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/fleet/storetest"
	"github.com/gpufleet/gpufleet/internal/pgtest"
)

// A network that drops everything (connections open, nothing answered):
// calls on pooled connections, calls waiting for a new connection and
// calls waiting for a free connection in the pool all fail by the
// Store's timeout with ErrUnreachable, the deadline kept in the chain.
func TestStoreCallsWhileTheNetworkHangs(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	p, pdsn := newCutProxy(t, dsn)
	s, err := pgstore.Open(t.Context(), pdsn, pgstore.WithSchema(schema), pgstore.WithTimeout(700*time.Millisecond))
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.PutFleet(t.Context(), storetest.Fleet("u")))
	l, err := s.AcquireLease(t.Context(), fleet.FleetLease("u"), "r", time.Minute)
	require.NoError(t, err)

	p.hang()
	var wg sync.WaitGroup
	for name, call := range everyCall(s, l) { // more calls than pooled connections
		wg.Go(func() {
			start := time.Now()
			err := call(context.Background())
			requireUnreachable(t, name, err, time.Since(start))
			assert.ErrorIs(t, err, context.DeadlineExceeded, name)
		})
	}
	wg.Wait()
	p.restore(t)
	_, err = s.Fleets(t.Context())
	require.NoError(t, err, "the same Store works again once the network is back")
}

// All of a small pool's connections are taken: a call that finds none free
// before its deadline answers ErrUnreachable.
func TestPoolAcquireTimeoutIsUnreachable(t *testing.T) {
	dsn := pgtest.DSN(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	defer pool.Close()
	s, err := pgstore.New(t.Context(), pool, pgstore.WithSchema(pgtest.Schema(t, dsn)))
	require.NoError(t, err)
	held, err := pool.Acquire(t.Context())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = s.Instances(ctx)
	require.ErrorIs(t, err, pgstore.ErrUnreachable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	held.Release()
	_, err = s.Instances(t.Context())
	require.NoError(t, err)
}

// lockedLease holds fleet "u"'s lease row locked from another connection,
// so that a write fenced by it waits, until the returned function.
func lockedLease(t *testing.T, dsn, schema string) func() {
	t.Helper()
	conn := connect(t, dsn)
	tx, err := conn.Begin(t.Context())
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), "SELECT 1 FROM "+pgx.Identifier{schema, "leases"}.Sanitize()+" WHERE name = $1 FOR UPDATE",
		fleet.FleetLease("u"))
	require.NoError(t, err)
	return func() { _ = tx.Rollback(context.Background()) }
}

// waiting returns once a statement on schema waits for a lock.
func waiting(t *testing.T, conn *pgx.Conn, schema string) int {
	t.Helper()
	for range 500 {
		var pid int
		err := conn.QueryRow(t.Context(), `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE '%' || $1 || '%' LIMIT 1`, schema).Scan(&pid)
		if err == nil {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no statement waits")
	return 0
}

// A connection that ends while its statement runs (the server
// terminates the session, or the network closes it) answers
// ErrUnreachable; the Store works again afterwards. A caller that cancels
// its context does not get ErrUnreachable.
func TestConnectionEndedMidStatement(t *testing.T) {
	dsn := pgtest.DSN(t)
	s, p, l := unreachableStore(t, dsn)
	admin := connect(t, dsn)
	write := func(ctx context.Context) chan error {
		done := make(chan error, 1)
		go func() {
			f := storetest.Fleet("u")
			f.Version = 1
			done <- s.PutFleet(fleet.WithLease(ctx, l), f)
		}()
		return done
	}
	for _, end := range []string{"terminated", "cut", "cancelled"} {
		unlock := lockedLease(t, dsn, s.Schema())
		ctx, cancel := context.WithCancel(t.Context())
		done := write(ctx)
		pid := waiting(t, admin, s.Schema())
		switch end {
		case "terminated":
			_, err := admin.Exec(t.Context(), "SELECT pg_terminate_backend($1)", pid)
			require.NoError(t, err)
		case "cut":
			p.cut()
		case "cancelled":
			cancel()
		}
		err := <-done
		cancel()
		unlock()
		require.Error(t, err, end)
		if end == "cancelled" {
			assert.ErrorIs(t, err, context.Canceled)
			assert.NotErrorIs(t, err, pgstore.ErrUnreachable, "the caller gave up: %v", err)
		} else {
			assert.ErrorIs(t, err, pgstore.ErrUnreachable, "%s: %v", end, err)
		}
		p.restore(t)
		_, err = s.Fleets(t.Context())
		require.NoError(t, err, "%s: the Store works again", end)
	}
}

// Errors of a database that answered keep their own classes and never
// answer ErrUnreachable: stale writes, fences, held and lost leases,
// missing records, a constraint the database enforces.
func TestAnswersOfTheDatabaseAreNotUnreachable(t *testing.T) {
	dsn := pgtest.DSN(t)
	s, _, l := unreachableStore(t, dsn)
	ctx := t.Context()
	stale := storetest.Fleet("u")
	stale.Version = 7
	newer, err := s.AcquireLease(ctx, "other", "r", time.Minute)
	require.NoError(t, err)
	old := newer
	old.Token--
	_, err = connect(t, dsn).Exec(ctx, "ALTER TABLE "+pgx.Identifier{s.Schema(), "meta"}.Sanitize()+
		" ADD CONSTRAINT short CHECK (length(value) < 5)")
	require.NoError(t, err)
	for name, c := range map[string]struct {
		class error
		err   error
	}{
		"stale":     {fleet.ErrStaleWrite, s.PutFleet(ctx, stale)},
		"fenced":    {fleet.ErrFenced, s.PutFleet(fleet.WithLease(ctx, fleet.Lease{Name: l.Name, Token: l.Token + 1}), stale)},
		"held":      {fleet.ErrLeaseHeld, second(s.AcquireLease(ctx, "other", "q", time.Minute))},
		"lost":      {fleet.ErrLeaseLost, second(s.RenewLease(ctx, old))},
		"no fleet":  {fleet.ErrNotFound, second(s.Fleet(ctx, "none"))},
		"no record": {fleet.ErrNotFound, second(s.Instance(ctx, "none"))},
	} {
		assert.ErrorIs(t, c.err, c.class, name)
		assert.NotErrorIs(t, c.err, pgstore.ErrUnreachable, name)
	}
	err = s.PutMeta(ctx, "k", "too long")
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	assert.Equal(t, "23514", pgErr.Code)
	assert.NotErrorIs(t, err, pgstore.ErrUnreachable)
}

func second[T any](_ T, err error) error { return err }

// No error holds the connection string's password: not while the
// database is unreachable, not from Open, not for a connection string
// that does not parse.
func TestErrorsNeverHoldThePassword(t *testing.T) {
	const pw = "pw-s3cret-xyz"
	dsn := pgtest.DSN(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), pw) // the test server trusts the loopback: the password is not checked
	s, p, l := unreachableStore(t, u.String())
	p.cut()
	var errs []error
	for _, call := range everyCall(s, l) {
		errs = append(errs, call(context.Background()))
	}
	_, err = pgstore.Open(t.Context(), "postgres://x:"+pw+"@"+p.addr+"/db?sslmode=disable&connect_timeout=2")
	require.ErrorIs(t, err, pgstore.ErrUnreachable)
	errs = append(errs, err)
	for _, bad := range []string{
		"postgres://u:" + pw + "@127.0.0.1:notaport/db",
		"host=127.0.0.1 port=x password=" + pw,
		"host=127.0.0.1 port=x password=" + strings.Replace(pw, "-", `\ `, 1),
		"postgres://u:" + pw + "@[::1/db",
		"postgres://u:" + pw + "@h/db?sslmode=bogus",
	} {
		_, err := pgstore.Open(t.Context(), bad)
		require.Error(t, err, bad)
		errs = append(errs, err)
	}
	for _, err := range errs {
		require.Error(t, err)
		for _, part := range []string{pw, "s3cret", "xyz"} {
			assert.NotContains(t, err.Error(), part)
		}
	}
}
