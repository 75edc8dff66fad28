package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A DSN that names no running server (a newcomer's typo, or PostgreSQL
// not started): the message must say the database could not be reached
// (not that a schema migration failed) and what to do next (start a local
// PostgreSQL with the one-line command, or check -dsn).
func TestUnreachableDSNSaysWhatToDo(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"-dsn", "postgres://gpufleet@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2"},
		func(string) string { return "" }, &out, &errOut)
	msg := errOut.String() + out.String()
	assert.NotZero(t, code)
	assert.NotContains(t, msg, "migrating schema", "a refused connection is reported as a failed migration")
	assert.Contains(t, msg, "pg-local.sh", "no next step: %s", msg)
}
