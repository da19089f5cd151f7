// Package spacestats is the storage statistics history (docs/ARCHITECTURE.md,
// Storage statistics): how many items and bytes each space of each store
// held, measured by the STORAGE_STATS processor from a listing of the
// space, one row per space per statistics run, kept as history for billing
// and storage reports.
//
// The Store interface is implemented in memory by memspacestats (for tests
// and the dev mode) and on PostgreSQL by pgspacestats (the space_stats
// table); both pass the conformance suite spacestatstest.Run.
package spacestats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/millfleet/mill/internal/base/paging"
)

// ErrInvalid is wrapped by the errors of rows that lack a required field or
// carry a negative count.
var ErrInvalid = errors.New("spacestats: invalid")

// Stats is one measurement of one space. The key is (RunID, Account,
// StoreID, SpaceID): putting a row with the key of an existing one
// replaces it, so a redelivered task does not count a space twice.
type Stats struct {
	// RunID is the statistics run (the producer's run ID; a count outside
	// any run is named by the time it began). Required.
	RunID   string
	Account string // required
	StoreID string // required
	SpaceID string // required
	// Items and Bytes are what the listing held; never negative. A space
	// deleted since it was listed is measured as 0 and 0.
	Items, Bytes int64
	// Started is when the listing began; Measured when it ended (zero:
	// now, the implementation's clock). Microsecond precision, UTC.
	Started, Measured time.Time
}

// Validate reports a missing field or a negative count (wrapping
// ErrInvalid).
func (s Stats) Validate() error {
	var errs []error
	for _, f := range [][2]string{{"run", s.RunID}, {"account", s.Account}, {"store", s.StoreID}, {"space", s.SpaceID}} {
		if f[1] == "" {
			errs = append(errs, fmt.Errorf("%w: stats %s/%s/%s: missing %s", ErrInvalid, s.Account, s.StoreID, s.SpaceID, f[0]))
		}
	}
	if s.Items < 0 || s.Bytes < 0 {
		errs = append(errs, fmt.Errorf("%w: stats %s/%s/%s: negative count (%d items, %d bytes)", ErrInvalid, s.Account, s.StoreID, s.SpaceID, s.Items, s.Bytes))
	}
	return errors.Join(errs...)
}

// Filter selects spaces; an empty field matches everything.
type Filter struct {
	Account, StoreID, SpaceID string
}

// Total is what the spaces selected by a filter held in one run: the sum
// of their rows of that run.
type Total struct {
	RunID string
	// Spaces is how many spaces of the filter the run measured (a run in
	// progress has measured some of them so far).
	Spaces       int64
	Items, Bytes int64
	// Started is the earliest Started of those rows; Measured the latest
	// Measured.
	Started, Measured time.Time
}

// Defaults and bounds of History's limit.
const (
	DefaultHistory = 100
	MaxHistory     = 10000
)

// HistoryLimit clamps a limit to 1..MaxHistory (DefaultHistory for ≤ 0).
func HistoryLimit(n int) int { return paging.Size(n, DefaultHistory, MaxHistory) }

// Store keeps the measurements.
//
// Contract (every implementation passes spacestatstest.Run):
//
//   - Put upserts a row by (RunID, Account, StoreID, SpaceID); an invalid
//     row fails with ErrInvalid and writes nothing. A zero Measured is
//     stored as now; a zero Started as Measured.
//   - Latest returns, for every space matching f, its row with the latest
//     Measured (ties: the greater RunID), ordered byte-wise by account,
//     store and space: what each space holds as far as Mill last counted.
//   - History returns one Total per run with rows matching f whose latest
//     Measured is at or after since (zero: no bound), the latest runs
//     first, at most HistoryLimit(limit).
//   - Safe for concurrent use; cancelling ctx abandons the call.
type Store interface {
	Put(ctx context.Context, s Stats) error
	Latest(ctx context.Context, f Filter) ([]Stats, error)
	History(ctx context.Context, f Filter, since time.Time, limit int) ([]Total, error)
}

// Truncate is the precision stores keep (PostgreSQL's microseconds), in UTC.
func Truncate(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// Sum adds up rows (for totals of a Latest answer).
func Sum(rows []Stats) (items, bytes int64) {
	for _, r := range rows {
		items += r.Items
		bytes += r.Bytes
	}
	return items, bytes
}
