// Package pgtest gives tests a PostgreSQL database: the connection string
// from GPUFLEET_PG_DSN and a schema of their own, dropped at the end, so
// that tests run in parallel on one server. Without GPUFLEET_PG_DSN a test
// is skipped, unless the CI variable is set (to anything): then it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable holding the connection string.
const EnvDSN = "GPUFLEET_PG_DSN"

// Hint is the one line that starts a local PostgreSQL for the tests.
const Hint = `eval "$(scripts/pg-local.sh start)"`

// DSN returns the connection string; without one it skips t, or fails it
// when the CI variable is set.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn != "" {
		return dsn
	}
	if _, ci := os.LookupEnv("CI"); ci {
		t.Fatalf("%s is empty under CI: .ci/run must start PostgreSQL", EnvDSN)
	}
	t.Skipf("%s is empty: start a local PostgreSQL with %s", EnvDSN, Hint)
	return ""
}

var unsafe = regexp.MustCompile(`[^a-z0-9_]+`)

// Schema returns a new schema name unique to t (not yet created) and drops
// the schema when t ends.
func Schema(t testing.TB, dsn string) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := unsafe.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	schema := "t_" + strings.Trim(name, "_") + "_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return schema
}
