package dup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/task"
)

// Defaults of Config.Retry.
const (
	DefaultRetryAttempts = 4
	DefaultRetryBase     = 250 * time.Millisecond
	DefaultRetryMax      = 5 * time.Second
	// DefaultResumeMinSize: smaller streamed copies keep no checkpoint
	// (a restart re-sends at most 256 MiB).
	DefaultResumeMinSize = 256 << 20
	// DefaultContinueAfter: a resumable copy still running after this
	// long hands its task back to continue (see Config.ContinueAfter),
	// within SQS's 12-hour limit on how long a message stays invisible.
	DefaultContinueAfter = 11 * time.Hour
)

// UserID is written as the user-id of the AUDIT tasks of the processor's
// writes (by AuditTo).
const UserID = "mill-duplication"

// Opener opens the storage provider of an account's store;
// *stores.Opener implements it.
type Opener = storage.Opener

// AuditFunc wraps the destination provider (store storeID) so that its
// writes are audited, naming sourceStoreID as the store the content was
// read from (normally audited.New; see AuditTo).
type AuditFunc func(p storage.Provider, account, storeID, sourceStoreID string) (storage.Provider, error)

// AuditTo returns an AuditFunc wrapping destinations in the audited
// decorator, which puts one AUDIT task per write on q in format; the
// task of a content write names the source store (task.KeySourceStoreID).
func AuditTo(q queue.Queue, format task.Format, clk clock.Clock) AuditFunc {
	return func(p storage.Provider, account, storeID, sourceStoreID string) (storage.Provider, error) {
		return audited.New(p, q, audited.Config{Account: account, StoreID: storeID, SourceStoreID: sourceStoreID,
			UserID: UserID, Format: format, Clock: clk})
	}
}

// LiveChecker reports whether the content index of a store still lists an
// item as live (present and not deleted).
type LiveChecker interface {
	IsLive(ctx context.Context, account, storeID, spaceID, contentID string) (bool, error)
}

// LiveCheckerFunc adapts a function to LiveChecker.
type LiveCheckerFunc func(ctx context.Context, account, storeID, spaceID, contentID string) (bool, error)

// IsLive calls f.
func (f LiveCheckerFunc) IsLive(ctx context.Context, account, storeID, spaceID, contentID string) (bool, error) {
	return f(ctx, account, storeID, spaceID, contentID)
}

// IndexGetter is the part of contentindex.Index the processor needs.
type IndexGetter interface {
	Get(ctx context.Context, item contentindex.Item) (*contentindex.Entry, error)
}

// FromIndex returns a LiveChecker over a content index: an item is live
// when it has a row that is not a tombstone.
func FromIndex(idx IndexGetter) LiveChecker {
	return LiveCheckerFunc(func(ctx context.Context, account, storeID, spaceID, contentID string) (bool, error) {
		e, err := idx.Get(ctx, contentindex.Item{Account: account, StoreID: storeID, SpaceID: spaceID, ContentID: contentID})
		if errors.Is(err, contentindex.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return !e.Deleted, nil
	})
}

// Retry bounds the retries of one provider call inside the processor:
// at most Attempts calls, waiting Base, 2·Base, 4·Base, … (at most Max)
// between them.
type Retry struct {
	Attempts  int
	Base, Max time.Duration
}

// Config configures a Processor. Opener, Audit and Live are required.
type Config struct {
	// Opener opens the source and destination stores.
	Opener Opener `validate:"required"`
	// Audit wraps the destination so its writes are audited (AuditTo).
	Audit AuditFunc `validate:"required"`
	// Live is the source store's content index, consulted before deleting
	// an item found only at the destination.
	Live LiveChecker `validate:"required"`
	// Policies are the duplication policy files (usually a *policy.Cache):
	// every task is checked against the policies in force
	// (policy.Authorize) before any store is touched.
	Policies policy.Reader `validate:"required"`
	// Retry of transient provider errors (default DefaultRetryAttempts,
	// DefaultRetryBase doubling up to DefaultRetryMax).
	Retry Retry
	// RestoreArchivedDays, when positive, makes a copy whose source item is
	// archived (storage.Info.Readable is false) ask the source provider
	// (a storage.Restorer) for a restored copy kept that many days before
	// the task is dead-lettered; 0 dead-letters it without asking. Either
	// way nothing is copied until the bytes can be read.
	RestoreArchivedDays int
	// Transfer: parts in flight and their size for streamed copies (the
	// source's ranged reads and the destination's multipart upload; zero:
	// the defaults, 4 of 8 MiB — 32 MiB of buffers per copy).
	Transfer storage.Transfer
	// Checkpoints, when set, makes streamed copies of items of at least
	// ResumeMinSize (default DefaultResumeMinSize) resumable: their
	// progress is kept there (the state bucket), so a retry, a redelivery
	// or another worker after a crash continues the upload (see
	// docs/ARCHITECTURE.md, Transfers).
	Checkpoints   blob.Store
	ResumeMinSize int64
	// ContinueAfter: a resumable copy still running after this long stops
	// at its next checkpoint and hands its task back (processors.Release:
	// visible again at once, no attempt counted), so the next receipt —
	// with a new visibility window — resumes it; the time is counted on
	// Clock (default DefaultContinueAfter; negative: never).
	ContinueAfter time.Duration
	// DisableServerSideCopy makes every copy stream through this process,
	// even between two stores that could copy server-side (benchmarks).
	DisableServerSideCopy bool
	// History is the audit log, which says what Mill's duplication wrote
	// at a destination: of a space whose source space is gone, only what
	// it shows Mill put there is deleted (package doc, Destination-only
	// spaces). Nil: such spaces are always left alone.
	History History
	// Clock times the retry waits (default the real clock).
	Clock clock.Clock
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// defaultConfig holds the values WithDefaults gives a Config's zero fields
// (Retry's field by field).
var defaultConfig = Config{
	Retry:         Retry{Attempts: DefaultRetryAttempts, Base: DefaultRetryBase, Max: DefaultRetryMax},
	ResumeMinSize: DefaultResumeMinSize,
	ContinueAfter: DefaultContinueAfter,
}

// WithDefaults returns c with zero optional fields set to their defaults.
func (c Config) WithDefaults() Config {
	defaults.Fill(&c, defaultConfig)
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	return c
}

func (c Config) validate() error {
	p := validate.Struct("dup: Config", c)
	p.Check(c.Retry.Attempts >= 1, "Retry.Attempts", c.Retry.Attempts, "be at least 1")
	p.Check(c.Retry.Base > 0 && c.Retry.Max >= c.Retry.Base, "Retry", fmt.Sprintf("%s..%s", c.Retry.Base, c.Retry.Max), "be 0 < Base <= Max")
	p.Check(c.RestoreArchivedDays >= 0, "RestoreArchivedDays", c.RestoreArchivedDays, "not be negative")
	return p.Err()
}
