package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnreachable is answered (errors.Is) by the error of every call
// (Open, New and each Store method) that failed because the database
// could not be reached: no connection could be made (no server at the
// address, refused credentials, a server starting up or shutting down,
// no free connection in the pool before the deadline), the connection
// broke or was closed during the call, the server ended the session
// (PostgreSQL error codes of class 08, and 57P01 to 57P03: shutdowns, a
// server not yet taking connections), or the deadline passed before the
// database answered. The cause stays in the chain (errors.As finds the
// *pgconn.ConnectError or net.Error). Such a call may be retried: a write
// whose connection broke after it was sent may have been stored, and a
// retry of a conditional write then answers fleet.ErrStaleWrite. A call
// whose context its caller cancelled does not answer ErrUnreachable, and
// errors of a database that answered (fleet.ErrStaleWrite, fleet.ErrFenced,
// lease errors, constraint violations) keep their own classes. Messages
// never hold the connection string's password.
var ErrUnreachable = errors.New("pgstore: the database cannot be reached")

// callError is the error of a failed call: what the call was doing, and
// the cause, marked when the database could not be reached.
type callError struct {
	what        string
	err         error
	unreachable bool
}

func (e *callError) Error() string {
	if e.unreachable {
		return "pgstore: " + e.what + ": the database cannot be reached: " + e.err.Error()
	}
	return "pgstore: " + e.what + ": " + e.err.Error()
}

func (e *callError) Unwrap() []error {
	if e.unreachable {
		return []error{ErrUnreachable, e.err}
	}
	return []error{e.err}
}

// fail wraps the cause of a failed call: "pgstore: <what>: <cause>", and
// answers ErrUnreachable when the cause says the database could not be
// reached.
func fail(err error, format string, args ...any) error {
	return &callError{what: fmt.Sprintf(format, args...), err: err, unreachable: unreachable(err)}
}

// unreachable reports whether err says that the database could not be
// reached or stopped answering, rather than that it answered with an
// error.
func unreachable(err error) bool {
	var (
		connect *pgconn.ConnectError
		netErr  net.Error
		pgErr   *pgconn.PgError
	)
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return false
	case errors.As(err, &connect):
		return true
	case errors.As(err, &pgErr):
		return sessionEnded(pgErr.Code)
	}
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed) || pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded)
}

// sessionEnded reports whether a server error (SQLSTATE code) says that the
// connection is lost or the server is going away: connection exceptions
// (class 08), an administrator's or a crash's shutdown, a server that
// cannot take connections now.
func sessionEnded(code string) bool {
	return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
}
