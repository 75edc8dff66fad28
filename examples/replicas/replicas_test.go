package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func noEnv(string) string { return "" }

func TestWithoutADatabaseItSaysHowToStartOne(t *testing.T) {
	var out, errs bytes.Buffer
	assert.Equal(t, 2, run(t.Context(), nil, noEnv, &out, &errs))
	assert.Empty(t, out.String())
	assert.Equal(t, 1, strings.Count(errs.String(), "\n"), "one line")
	assert.Contains(t, errs.String(), `eval "$(bash scripts/pg-local.sh start)"`)
}

func TestHelpSaysWhatItIsFirst(t *testing.T) {
	var out, errs bytes.Buffer
	assert.Equal(t, 0, run(t.Context(), []string{"-h"}, noEnv, &out, &errs))
	first, _, _ := strings.Cut(errs.String(), "\n")
	assert.Equal(t, "replicas runs three gpufleet Manager replicas on one PostgreSQL and shows one taken over.", first)
	assert.Contains(t, errs.String(), "-lease-ttl")
}

// The whole program against PostgreSQL: one replica stops half-way, the
// others take its fleets over, every fleet is deleted, nothing is left in
// the fakes (SSH keys included) and the run's schema is dropped.
func TestReplicasTakeOverAndLeaveNothing(t *testing.T) {
	dsn := pgtest.DSN(t)
	var out, errs bytes.Buffer
	code := run(t.Context(), []string{"-dsn", dsn, "-lease-ttl", "1s", "-speed", "400"}, noEnv, &out, &errs) // slower clouds: a stall under a loaded CI is fewer cloud minutes
	report := out.String()
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", report, errs.String())
	assert.Contains(t, report, "\nleaked: 0\n")
	assert.Regexp(t, `\ntakeover: [0-9.]+s of wall time from r[123]'s stop until the others held all its fleets`, report)
	assert.Regexp(t, `\n  r[123] +took [^\n]*; took over `, report, "a live replica took fleets over")
	assert.Regexp(t, `\n  (r[123]) +took [^\n]*; stopped at `, report)
	assert.Regexp(t, `instances: (\d+) created, (\d+) terminated`, report)
	m := regexp.MustCompile(`instances: (\d+) created, (\d+) terminated`).FindStringSubmatch(report)
	assert.Equal(t, m[1], m[2], "every instance terminated")
	assert.Equal(t, "10", m[1], "one per node: nothing created twice")

	schema := regexp.MustCompile(`schema (replicas_[0-9a-f]{8})`).FindStringSubmatch(report)
	require.Len(t, schema, 2)
	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1", schema[1]).Scan(&n))
	assert.Zero(t, n, "the run's schema is dropped")
}

// A -speed the sim's clock cannot run at (NaN, an infinity, over
// sim.MaxSpeed, not positive) is a command-line error.
func TestSpeedFlagRefused(t *testing.T) {
	for _, v := range []string{"0", "-3", "NaN", "+Inf", "1e9"} {
		_, err := parseFlags([]string{"-speed", v}, io.Discard)
		assert.ErrorContains(t, err, "speed must be positive", v)
	}
}
