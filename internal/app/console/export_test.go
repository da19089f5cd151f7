package console

import (
	"cmp"
	"context"

	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/pkg/bitlog"
)

// ScanForTest exposes scan: the rows kept, the next token and the rows read.
func ScanForTest(ctx context.Context, l bitlog.Log, f bitlog.Filter, keep func(bitlog.Row) bool, want, budget int) ([]bitlog.Row, string, int, error) {
	rows, next, st, err := scan(ctx, l, f, keep, want, budget)
	return rows, next, st.rows, err
}

// IdleForTest waits until no dead-letter scan, redrive or purge runs.
func (s *Server) IdleForTest(ctx context.Context) error { return s.dl.idle(ctx) }

// DeadLettersSeenForTest is how many dead letters the index shows (the
// running scan's before the first ends).
func (s *Server) DeadLettersSeenForTest() int {
	s.dl.mu.Lock()
	defer s.dl.mu.Unlock()
	if snap := cmp.Or(s.dl.cur, s.dl.next); snap != nil {
		return len(snap.Rows)
	}
	return 0
}

// QueuesForTest is the console's queue reader.
func (s *Server) QueuesForTest() *queuestats.Reader { return s.cfg.Queues }
