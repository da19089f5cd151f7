package bitlog

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RunSpace is the bit producer's record of one space in one of its runs,
// keyed by (RunID, Account, StoreID, SpaceID). Only the producer writes it
// (Runs.StartSpace, Runs.FinishSpace), before it queues the space's
// BIT_REPORT; no queue message can. It is what the report processor and
// the producer's skip logic trust: the run was started by the producer,
// and it listed Expected items.
type RunSpace struct {
	RunID   string // required: the producer run (its start, e.g. 20260501T030000Z)
	Account string // required
	StoreID string // required
	SpaceID string // required
	// Started is when the producer began listing the space; zero means
	// "now" (the implementation's clock). Microsecond precision, UTC.
	Started time.Time
	// Listed is when the producer finished listing the space: zero while
	// it lists. Expected is final once Listed is set.
	Listed time.Time
	// Expected is how many items the producer listed (one BIT task each).
	Expected int64
}

// Done reports whether the producer finished listing the space.
func (s RunSpace) Done() bool { return !s.Listed.IsZero() }

// Key returns the record's key as a string, for messages.
func (s RunSpace) Key() string {
	return fmt.Sprintf("%s:%s/%s/%s", s.RunID, s.Account, s.StoreID, s.SpaceID)
}

// Validate reports a missing required field or a negative count (wrapping
// ErrInvalid).
func (s RunSpace) Validate() error {
	var errs []error
	for _, f := range [][2]string{{"run", s.RunID}, {"account", s.Account}, {"store", s.StoreID}, {"space", s.SpaceID}} {
		if f[1] == "" {
			errs = append(errs, fmt.Errorf("%w: run space %s: missing %s", ErrInvalid, s.Key(), f[0]))
		}
	}
	if s.Expected < 0 {
		errs = append(errs, fmt.Errorf("%w: run space %s: negative expected count %d", ErrInvalid, s.Key(), s.Expected))
	}
	return errors.Join(errs...)
}

// Runs is the bit producer's record of its runs, part of Log.
//
// Contract (bitlogtest.Run holds every implementation to it):
//
//   - StartSpace records that the producer began listing a space in a run
//     (s.Started; zero: now). An existing record is left as it is: a
//     repeated first bite neither moves Started nor undoes a finished
//     listing.
//   - FinishSpace records that the listing ended with s.Expected items
//     (s.Listed; zero: now), making the record if StartSpace did not
//     (Started as in StartSpace). Repeated, it replaces Listed and
//     Expected (a repeated last bite lists again) and keeps Started.
//   - RunSpace returns the record, or an error wrapping ErrNoRun.
//   - An invalid record fails with ErrInvalid and writes nothing.
type Runs interface {
	StartSpace(ctx context.Context, s RunSpace) error
	FinishSpace(ctx context.Context, s RunSpace) error
	RunSpace(ctx context.Context, runID, account, storeID, spaceID string) (RunSpace, error)
}
