// Package pgerr names the PostgreSQL error codes (SQLSTATE) Mill acts on
// and finds them in an error chain: the bit log's dropped month
// (pkg/bitlog/pgbitlog), the run records of a database not yet migrated
// (pkg/runs/pgruns) and the server that does not answer, an outage the
// processors wait out (processors.IsUnavailable).
package pgerr

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATE codes (PostgreSQL's documentation, Appendix A). A code of two
// characters is a class: it stands for every code that starts with it.
const (
	ClassConnectionException = "08"    // the connection failed or broke
	CheckViolation           = "23514" // also a row no partition takes
	UndefinedColumn          = "42703"
	UndefinedTable           = "42P01"
	TooManyConnections       = "53300"
	AdminShutdown            = "57P01" // the server is shutting down
	CrashShutdown            = "57P02"
	CannotConnectNow         = "57P03" // the server is starting up
)

// Find returns the PostgreSQL server error in err's chain if its code is
// one of codes (a class matches each of its codes).
func Find(err error, codes ...string) (*pgconn.PgError, bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return nil, false
	}
	for _, c := range codes {
		if pe.Code == c || len(c) == 2 && strings.HasPrefix(pe.Code, c) {
			return pe, true
		}
	}
	return nil, false
}

// Is reports whether err's chain holds a PostgreSQL server error whose
// code is one of codes (as Find).
func Is(err error, codes ...string) bool {
	_, ok := Find(err, codes...)
	return ok
}
