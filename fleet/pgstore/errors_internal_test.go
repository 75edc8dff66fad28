package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"

	"github.com/gpufleet/gpufleet/fleet"
)

// Which causes say the database could not be reached.
func TestUnreachableCauses(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"connect":              {&pgconn.ConnectError{}, true},
		"refused":              {refused, true},
		"reset":                {fmt.Errorf("read: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), true},
		"eof":                  {fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), true},
		"closed":               {fmt.Errorf("x: %w", pgconn.ErrConnClosed), true},
		"deadline":             {context.DeadlineExceeded, true},
		"admin shutdown":       {&pgconn.PgError{Code: "57P01"}, true},
		"crash shutdown":       {&pgconn.PgError{Code: "57P02"}, true},
		"cannot connect now":   {&pgconn.PgError{Code: "57P03"}, true},
		"connection failure":   {&pgconn.PgError{Code: "08006"}, true},
		"cancelled":            {context.Canceled, false},
		"cancelled on the net": {errors.Join(context.Canceled, refused), false},
		"unique violation":     {&pgconn.PgError{Code: "23505"}, false},
		"query cancelled":      {&pgconn.PgError{Code: "57014"}, false},
		"serialization":        {&pgconn.PgError{Code: "40001"}, false},
		"json":                 {&json.SyntaxError{}, false},
		"stale":                {&fleet.StaleWriteError{}, false},
		"nil":                  {nil, false},
	} {
		assert.Equal(t, c.want, unreachable(c.err), name)
	}
}

// A failed call's error: its text, and the chain.
func TestCallError(t *testing.T) {
	cause := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	err := fail(cause, "reading %s records", "fleet")
	assert.Equal(t, "pgstore: reading fleet records: the database cannot be reached: dial tcp: connection refused", err.Error())
	assert.ErrorIs(t, err, ErrUnreachable)
	var op *net.OpError
	assert.ErrorAs(t, err, &op)
	other := fail(&pgconn.PgError{Severity: "ERROR", Message: "boom", Code: "23514"}, "writing %s", "k")
	assert.Equal(t, "pgstore: writing k: ERROR: boom (SQLSTATE 23514)", other.Error())
	assert.NotErrorIs(t, other, ErrUnreachable)
}

// A connection string that does not parse is named by what is wrong, not
// echoed.
func TestWithoutConnString(t *testing.T) {
	_, err := Open(context.Background(), `host=h port=x password=a\ b`)
	assert.Equal(t, "pgstore: parsing the connection string: invalid port", err.Error())
	assert.Equal(t, "invalid", withoutConnString(errors.New("no backquote")))
}
