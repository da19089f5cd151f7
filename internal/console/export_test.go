package console

import (
	"context"

	"github.com/millfleet/mill/pkg/bitlog"
)

// ScanForTest exposes scan: the rows kept, the next token and the rows read.
func ScanForTest(ctx context.Context, l bitlog.Log, f bitlog.Filter, keep func(bitlog.Row) bool, want, budget int) ([]bitlog.Row, string, int, error) {
	rows, next, st, err := scan(ctx, l, f, keep, want, budget)
	return rows, next, st.rows, err
}

// IdleForTest waits until no dead-letter scan, redrive or purge runs.
func (s *Server) IdleForTest(ctx context.Context) error { return s.dl.idle(ctx) }
