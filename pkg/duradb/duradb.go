package duradb

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
)

// DependencyMySQL names this database in Unavailable errors (Workman's
// circuit, processors.IsUnavailable).
const DependencyMySQL = "mysql"

// Errors of every implementation (test with errors.Is).
var (
	// ErrInvalid: a row lacks a required field or carries a negative count.
	ErrInvalid = errors.New("duradb: invalid row")
	// ErrUnrepresentable: DuraCloud's schema cannot hold the row (a
	// character outside utf8mb3, a value longer than its column).
	ErrUnrepresentable = errors.New("duradb: row not representable in DuraCloud's schema")
)

// Placeholders DuraCloud writes for what it does not know.
const (
	Unknown     = "unknown"
	UnknownSize = "0"
)

// DuraCloud's bit report results (its BitIntegrityReportResult).
const (
	JavaSuccess = "SUCCESS"
	JavaFailure = "FAILURE"
)

// ManifestItem is a manifest_item row (DuraCloud's ManifestItem entity).
type ManifestItem struct {
	Account, StoreID, SpaceID, ContentID string
	Checksum, Size, MimeType             string // as DuraCloud keeps them: strings
	Deleted                              bool
	MissingFromStorageProvider           bool
	Modified                             time.Time // millisecond precision, UTC
}

// UniqueKey is DuraCloud's key of a manifest row: the MD5 (hex) of
// account/store/space/content.
func UniqueKey(account, storeID, spaceID, contentID string) string {
	s := md5.Sum([]byte(account + "/" + storeID + "/" + spaceID + "/" + contentID))
	return hex.EncodeToString(s[:])
}

// BitReport is a bit_report row (DuraCloud's BitIntegrityReport entity).
// The key of a report is (Account, StoreID, SpaceID, ReportSpaceID,
// ReportContentID): putting it again replaces its result and date.
type BitReport struct {
	Account, StoreID, SpaceID      string
	ReportSpaceID, ReportContentID string
	Result                         string    // JavaSuccess or JavaFailure
	Completed                      time.Time // completion_date: whole seconds, UTC
}

// SpaceStats is a space_stats row (DuraCloud's SpaceStats entity). The key
// is (Account, StoreID, SpaceID, Modified).
type SpaceStats struct {
	Account, StoreID, SpaceID string
	Bytes, Objects            int64
	Modified                  time.Time // whole seconds, UTC (a datetime column)
}

// DB is DuraCloud's mill database.
//
// Contract (duradbtest.Run):
//
//   - PutManifest upserts by UniqueKey unless the row's Modified is later
//     than the item's (equal times: the later call wins); applied says
//     whether it wrote.
//   - DeleteSpace marks deleted, at `at`, the space's live rows not later
//     than `at`, and returns how many.
//   - SetMissing sets missing_from_storage_provider of an existing live
//     row (and nothing else); false, creating nothing, when there is none.
//   - PutBitReport and PutSpaceStats upsert by their keys.
//   - Manifest lists a space's rows, tombstones included, by content ID;
//     BitReports a space's reports, latest completion first; Stats a
//     space's rows, oldest first.
//   - An invalid row fails with ErrInvalid and writes nothing; a row the
//     schema cannot hold fails with ErrUnrepresentable; an unanswered
//     call fails with an error whose Unavailable() is DependencyMySQL.
//   - Safe for concurrent use.
type DB interface {
	PutManifest(ctx context.Context, m ManifestItem) (applied bool, err error)
	DeleteSpace(ctx context.Context, account, storeID, spaceID string, at time.Time) (int64, error)
	SetMissing(ctx context.Context, account, storeID, spaceID, contentID string, missing bool) (bool, error)
	PutBitReport(ctx context.Context, r BitReport) error
	PutSpaceStats(ctx context.Context, s SpaceStats) error
	Manifest(ctx context.Context, account, storeID, spaceID string) ([]ManifestItem, error)
	BitReports(ctx context.Context, account, storeID, spaceID string) ([]BitReport, error)
	Stats(ctx context.Context, account, storeID, spaceID string) ([]SpaceStats, error)
	Ping(ctx context.Context) error
}

// Truncations of the columns (datetime(3) and datetime).
func Millis(t time.Time) time.Time  { return t.Truncate(time.Millisecond).UTC() }
func Seconds(t time.Time) time.Time { return t.Truncate(time.Second).UTC() }

func missing(fields ...[2]string) error {
	var errs []error
	for _, f := range fields {
		if f[1] == "" {
			errs = append(errs, fmt.Errorf("%w: missing %s", ErrInvalid, f[0]))
		}
	}
	return errors.Join(errs...)
}

// Validate reports a missing field of a manifest row.
func (m ManifestItem) Validate() error {
	err := missing([2]string{"account", m.Account}, [2]string{"store", m.StoreID}, [2]string{"space", m.SpaceID},
		[2]string{"content ID", m.ContentID}, [2]string{"checksum", m.Checksum}, [2]string{"size", m.Size},
		[2]string{"mimetype", m.MimeType})
	if m.Modified.IsZero() {
		err = errors.Join(err, fmt.Errorf("%w: missing modified time", ErrInvalid))
	}
	return err
}

// Validate reports a missing field or an unknown result.
func (r BitReport) Validate() error {
	err := missing([2]string{"account", r.Account}, [2]string{"store", r.StoreID}, [2]string{"space", r.SpaceID},
		[2]string{"report space", r.ReportSpaceID}, [2]string{"report content ID", r.ReportContentID})
	if r.Result != JavaSuccess && r.Result != JavaFailure {
		err = errors.Join(err, fmt.Errorf("%w: result %q is not SUCCESS or FAILURE", ErrInvalid, r.Result))
	}
	if r.Completed.IsZero() {
		err = errors.Join(err, fmt.Errorf("%w: missing completion date", ErrInvalid))
	}
	return err
}

// Validate reports a missing field or a negative count.
func (s SpaceStats) Validate() error {
	err := missing([2]string{"account", s.Account}, [2]string{"store", s.StoreID}, [2]string{"space", s.SpaceID})
	if s.Bytes < 0 || s.Objects < 0 {
		err = errors.Join(err, fmt.Errorf("%w: negative count", ErrInvalid))
	}
	if s.Modified.IsZero() {
		err = errors.Join(err, fmt.Errorf("%w: missing time", ErrInvalid))
	}
	return err
}

// JavaResult maps a Mill report result to DuraCloud's; ok is false for a
// report DuraCloud has no result for (EMPTY: nothing was checked).
func JavaResult(r bitlog.Result) (string, bool) {
	switch r {
	case bitlog.ResultSuccess:
		return JavaSuccess, true
	case bitlog.ResultFailure, bitlog.ResultError:
		return JavaFailure, true
	}
	return "", false
}

// UnavailableError marks an outage of this database.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string {
	return "duracloud mill database unavailable: " + e.Err.Error()
}
func (e *UnavailableError) Unwrap() error       { return e.Err }
func (e *UnavailableError) Unavailable() string { return DependencyMySQL }
