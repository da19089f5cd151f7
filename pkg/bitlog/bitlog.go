// Package bitlog is the bit log (docs/ARCHITECTURE.md, Bit integrity): one
// row per content item per bit-integrity run, holding the outcome of the bit
// check (SUCCESS, FAILURE or ERROR), the row of the decision table that
// applied, the four checksums the check compared and how the content
// checksum was made (Method: read and hashed, computed at rest by the
// provider, or only the stored checksums compared; with the bytes hashed
// and whether the copy was archived) and the agent that made it (Agent:
// the Workman instance and Mill version, from the processor's own
// configuration; a run's finding stands against a later row of the run
// that is no finding and not its re-check: Row.Replaces), plus one report
// per space per run,
// the bit producer's record of each space of its runs (RunSpace: when it
// listed the space and how many items it listed), and the latest fresh
// verdict of each copy over every run (Verdicts: what fixity coverage is
// computed from; it survives the retention of old months). The
// record is written only by the producer, never from a queue message; a
// report is made only for a recorded run, and counts what the rows of the
// run hold.
//
// The Log interface is implemented in memory by membitlog (for tests and
// the dev mode) and on PostgreSQL by pgbitlog; both pass the conformance
// suite bitlogtest.Run.
package bitlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/millfleet/mill/internal/base/paging"
)

// Result is the outcome of one bit check, or of a space's report.
type Result string

// Results.
const (
	// ResultSuccess: the checksums agree (decision table case 1), or there
	// was nothing to check (case 11: the item is deleted everywhere).
	ResultSuccess Result = "SUCCESS"
	// ResultFailure: the checksums disagree; the bit check fixed what it
	// could or raised a resolution (BIT_ERROR) task.
	ResultFailure Result = "FAILURE"
	// ResultError: the item could not be checked to a conclusion (for
	// example it stayed missing from storage after the last retry).
	ResultError Result = "ERROR"
	// ResultEmpty, of a report only: the run checked no item of the space
	// (an empty space, or items deleted since the producer listed them or
	// missing for the first time). Nothing was found wrong, and nothing
	// was found right: it is not a SUCCESS.
	ResultEmpty Result = "EMPTY"
)

// Results lists every result of a row.
var Results = []Result{ResultSuccess, ResultFailure, ResultError}

// ReportResults lists every result of a report.
var ReportResults = []Result{ResultSuccess, ResultFailure, ResultError, ResultEmpty}

// Valid reports whether r is one of Results (a row's result).
func (r Result) Valid() bool {
	return r == ResultSuccess || r == ResultFailure || r == ResultError
}

// Method is how a verdict's content checksum (C) was made.
type Method string

// Methods.
const (
	// MethodRead: Mill read the bytes and hashed them.
	MethodRead Method = "read"
	// MethodAtRest: the provider computed the checksum of the stored
	// bytes (S3 Batch Operations' Compute checksum).
	MethodAtRest Method = "at-rest"
	// MethodStored: no byte was hashed; only the stored checksums were
	// compared. Not a fresh verdict.
	MethodStored Method = "stored"
)

// Fresh reports whether a verdict made this way observed the bytes.
func (m Method) Fresh() bool { return m == MethodRead || m == MethodAtRest }

// Valid reports whether m is "" (a row of a caller that records no
// method: not fresh) or one of the methods.
func (m Method) Valid() bool { return m == "" || m.Fresh() || m == MethodStored }

// Verdict returns the verdict r makes and true when r is a fresh verdict
// (Method fresh, Result SUCCESS or FAILURE), false otherwise.
func (r Row) Verdict() (Verdict, bool) {
	if !r.Method.Fresh() || (r.Result != ResultSuccess && r.Result != ResultFailure) {
		return Verdict{}, false
	}
	return Verdict{ContentID: r.ContentID, Result: r.Result, Method: r.Method, Archived: r.Archived, CheckedAt: r.CheckedAt}, true
}

// Verdict is the latest fresh verdict of one copy: the newest row of the
// copy, over every run, whose Method is fresh and whose Result is SUCCESS
// or FAILURE (an ERROR reached no verdict).
type Verdict struct {
	ContentID string
	Result    Result
	Method    Method
	Archived  bool
	CheckedAt time.Time
}

// Verdicts lists the latest fresh verdict of each copy of a space.
type Verdicts interface {
	// Verdicts returns the verdicts of a space's copies in ascending
	// byte-wise ContentID order, starting after `after` ("" = from the
	// start), at most limit (clamped by PageSize); more is true when
	// further ones follow.
	Verdicts(ctx context.Context, account, storeID, spaceID, after string, limit int) (vs []Verdict, more bool, err error)
}

// Page sizes of Results, Reports and Verdicts: those of every listing of
// items (paging.DefaultItems, paging.MaxItems), so the bit log and the
// content index page side by side.
const (
	DefaultPageSize = paging.DefaultItems
	MaxPageSize     = paging.MaxItems
)

// PageSize clamps a limit to 1..MaxPageSize (DefaultPageSize for ≤ 0).
func PageSize(limit int) int { return paging.Items(limit) }

// Row is the result of checking one item in one run. The key of a row is
// (RunID, Account, StoreID, SpaceID, ContentID): recording a row with the
// key of an existing one replaces it, except that a run's finding stands
// (Row.Replaces).
type Row struct {
	// RunID is the bitproducer run; "" for a check outside any run (an
	// ad-hoc BIT task), which then shares one row per item.
	RunID     string
	Account   string // required
	StoreID   string // required
	StoreKind string // "s3", "fs", …; may be empty
	SpaceID   string // required
	ContentID string // required
	Result    Result // required; one of Results
	// Case is the row of the bit-check decision table that applied
	// (1..11); 0 when none did (for example an ERROR recorded for a
	// reason outside the table).
	Case int
	// The four checksums compared; "" means null (not available: a
	// missing item, no index row, no audit entry, or content not read).
	ContentChecksum string // C
	StorageChecksum string // S
	IndexChecksum   string // I
	AuditChecksum   string // A
	// Details is a human explanation ("" when there is nothing to add).
	Details string
	// Method is how C was obtained: MethodRead, MethodAtRest, or
	// MethodStored when no byte was hashed ("" on rows written before
	// methods were recorded: not fresh).
	Method Method
	// Bytes is how many bytes were hashed to make C (0 when none).
	Bytes int64
	// Archived: the copy was in an archival storage class when checked.
	Archived bool
	// CheckedAt is when the check happened; zero means "now" (the
	// implementation's clock). Stored with microsecond precision, UTC.
	CheckedAt time.Time
	// Agent is who made the check ("" fields: not recorded, as on rows
	// written before agents were).
	Agent Agent
	// Supersedes, on a re-check after a repair, is the case of the finding
	// it re-checks (the bit-error processor's re-check names it); 0
	// otherwise. Not stored: it only decides whether the row may replace
	// a finding (Replaces), and reads back as 0.
	Supersedes int
}

// Finding reports whether r is what a check found wrong: a FAILURE, or an
// ERROR that names a case of the decision table (an ERROR of case 0 —
// "not checked", a dead-lettered check — is a placeholder, not a finding).
func (r Row) Finding() bool {
	return r.Result == ResultFailure || (r.Result == ResultError && r.Case > 0)
}

// Replaces reports whether recording r replaces old, the row with r's key.
// It does, except that a producer run's finding stands: a row that is no
// finding (a SUCCESS, or a placeholder ERROR of case 0) does not replace a
// finding of the same run (RunID not "") unless it is the re-check of that
// finding's case (r.Supersedes = old.Case > 0). A check
// that runs again in the same run — a redelivered or retried task, a
// duplicate message — looks at an item its first run's actions (an audit
// entry re-synced, an index checksum set) may have repaired; what the run
// found must stay in its report. The item's verdict (Verdicts) still
// moves forward with the SUCCESS: it is the copy's latest observation.
// A finding replaces a finding, and a row outside any run is the item's
// latest check.
func (r Row) Replaces(old Row) bool {
	if r.RunID == "" || r.Finding() || !old.Finding() {
		return true
	}
	return r.Supersedes > 0 && r.Supersedes == old.Case
}

// Agent names the Workman that made a check: its instance ID (the fleet
// member's, workman --worker-id) and Mill's version. The processor
// writes its own configuration here, never a message's field.
type Agent struct {
	Instance string
	Version  string
}

// MaxAgentField is the longest Agent.Instance or Agent.Version, in bytes.
const MaxAgentField = 256

// Validate reports a field longer than MaxAgentField, not valid UTF-8, or
// holding a control character (wrapping ErrInvalid).
func (a Agent) Validate() error {
	var errs []error
	for _, f := range [][2]string{{"instance", a.Instance}, {"version", a.Version}} {
		if len(f[1]) > MaxAgentField || !utf8.ValidString(f[1]) || strings.ContainsFunc(f[1], unicode.IsControl) {
			errs = append(errs, fmt.Errorf("%w: agent %s %q: want at most %d bytes of UTF-8 without control characters",
				ErrInvalid, f[0], f[1], MaxAgentField))
		}
	}
	return errors.Join(errs...)
}

// Key returns the row's key as a string, for messages.
func (r Row) Key() string {
	return fmt.Sprintf("%s:%s/%s/%s/%s", r.RunID, r.Account, r.StoreID, r.SpaceID, r.ContentID)
}

// Validate reports a missing required field, an unknown result or method,
// a negative case or byte count, or an invalid agent (wrapping
// ErrInvalid).
func (r Row) Validate() error {
	var errs []error
	for _, f := range [][2]string{{"account", r.Account}, {"store", r.StoreID}, {"space", r.SpaceID}, {"content", r.ContentID}} {
		if f[1] == "" {
			errs = append(errs, fmt.Errorf("%w: row %s: missing %s", ErrInvalid, r.Key(), f[0]))
		}
	}
	if !r.Result.Valid() {
		errs = append(errs, fmt.Errorf("%w: row %s: unknown result %q", ErrInvalid, r.Key(), string(r.Result)))
	}
	if r.Case < 0 {
		errs = append(errs, fmt.Errorf("%w: row %s: negative case %d", ErrInvalid, r.Key(), r.Case))
	}
	if !r.Method.Valid() {
		errs = append(errs, fmt.Errorf("%w: row %s: unknown method %q", ErrInvalid, r.Key(), string(r.Method)))
	}
	if r.Bytes < 0 {
		errs = append(errs, fmt.Errorf("%w: row %s: negative byte count %d", ErrInvalid, r.Key(), r.Bytes))
	}
	if r.Supersedes < 0 {
		errs = append(errs, fmt.Errorf("%w: row %s: negative superseded case %d", ErrInvalid, r.Key(), r.Supersedes))
	}
	if err := r.Agent.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("row %s: %w", r.Key(), err))
	}
	return errors.Join(errs...)
}

// Counts are the results of a space in a run.
type Counts struct {
	Total, Success, Failure, Error int64
}

// Add counts one result.
func (c *Counts) Add(r Result) {
	c.Total++
	switch r {
	case ResultSuccess:
		c.Success++
	case ResultFailure:
		c.Failure++
	case ResultError:
		c.Error++
	}
}

// Report is the bit-integrity report of one space in one run, keyed by
// (RunID, Account, StoreID, SpaceID): putting a report with the key of an
// existing one replaces it.
type Report struct {
	RunID   string
	Account string // required
	StoreID string // required
	SpaceID string // required
	// Result is required: one of ReportResults. A SUCCESS counts at least
	// one item; an EMPTY none.
	Result Result
	Counts Counts // never negative
	// Location of the TSV report, e.g. s3://bucket/bit-integrity/…; may be
	// empty.
	Location string
	// CreatedAt is when the report was made; zero means "now". Microsecond
	// precision, UTC.
	CreatedAt time.Time
}

// Validate reports a missing required field, an unknown result (one of
// ReportResults), a negative count, a SUCCESS that counted no item or an
// EMPTY that counted some (wrapping ErrInvalid).
func (r Report) Validate() error {
	var errs []error
	for _, f := range [][2]string{{"account", r.Account}, {"store", r.StoreID}, {"space", r.SpaceID}} {
		if f[1] == "" {
			errs = append(errs, fmt.Errorf("%w: report: missing %s", ErrInvalid, f[0]))
		}
	}
	if !r.Result.Valid() && r.Result != ResultEmpty {
		errs = append(errs, fmt.Errorf("%w: report: unknown result %q", ErrInvalid, string(r.Result)))
	}
	c := r.Counts
	if c.Total < 0 || c.Success < 0 || c.Failure < 0 || c.Error < 0 {
		errs = append(errs, fmt.Errorf("%w: report: negative count %+v", ErrInvalid, c))
	}
	if r.Result == ResultSuccess && c.Total <= 0 {
		errs = append(errs, fmt.Errorf("%w: report: a SUCCESS must count the items it checked (a report of no item is EMPTY)", ErrInvalid))
	}
	if r.Result == ResultEmpty && c.Total != 0 {
		errs = append(errs, fmt.Errorf("%w: report: an EMPTY report counts no item, not %d", ErrInvalid, c.Total))
	}
	return errors.Join(errs...)
}

// Filter selects rows for Results. Empty fields match everything (RunID ""
// matches every run).
type Filter struct {
	RunID   string
	Account string
	StoreID string
	SpaceID string
	// ContentID, when set, keeps only the rows of that item (with the
	// other fields set, its one row of a run).
	ContentID string
	// Result, when set, keeps only rows with that result.
	Result Result
	// After is the page token returned by the previous call ("" = from
	// the start).
	After string
	// Limit is the page size (DefaultPageSize when ≤ 0, at most
	// MaxPageSize).
	Limit int
}

// Validate checks the filter's result (wrapping ErrInvalid).
func (f Filter) Validate() error {
	if f.Result != "" && !f.Result.Valid() {
		return fmt.Errorf("%w: filter: unknown result %q", ErrInvalid, string(f.Result))
	}
	return nil
}

// ReportFilter selects reports for Reports. Empty fields match everything
// (RunID "" matches every run).
type ReportFilter struct {
	RunID   string
	Account string
	StoreID string
	SpaceID string
	// Limit is the most reports returned (DefaultPageSize when ≤ 0, at
	// most MaxPageSize).
	Limit int
}

// Log is the bit log.
//
// Contract (every implementation passes bitlogtest.Run):
//
//   - Record upserts a row: one row per (RunID, Account, StoreID, SpaceID,
//     ContentID). A row replaces every field of the row with its key when
//     Row.Replaces says so (a run's finding stands against a later row
//     that is no finding and not its re-check) and is dropped otherwise; it never
//     adds a second one. An invalid row fails with ErrInvalid and writes
//     nothing. A zero CheckedAt is stored as the current time.
//   - Results returns the rows matching f in ascending byte-wise order of
//     (RunID, Account, StoreID, SpaceID, ContentID), at most f.Limit per
//     page, and a token for the next page ("" when no more follow). A
//     token comes only from the same implementation and filter; a token
//     it did not make fails with ErrBadPageToken.
//   - Count returns how many items of a space have a row for the run, by
//     result.
//   - PutReport upserts a report: one per (RunID, Account, StoreID,
//     SpaceID). Reports returns the reports matching f, newest CreatedAt
//     first (ties in key order), at most f.Limit.
//   - Runs: the bit producer's record of its runs (see Runs).
//   - Verdicts: the latest fresh verdict of each copy (Row.Verdict), kept
//     apart from the rows and updated by Record in the same write: it only
//     moves forward in time (a row checked before the copy's verdict, such
//     as a replayed older check, leaves it as it is; one checked at the
//     same instant replaces it; a SUCCESS that leaves a finding's row moves
//     it all the same), a row that is not a fresh verdict (ERROR,
//     MethodStored, no method) never touches it, and it outlives the rows
//     that made it (the retention of old months, a redelivered check that
//     replaced its row with an ERROR). Copies of other spaces, stores or
//     accounts never show.
//   - Safe for concurrent use; cancelling ctx abandons the call.
type Log interface {
	Record(ctx context.Context, r Row) error
	Results(ctx context.Context, f Filter) (rows []Row, next string, err error)
	Count(ctx context.Context, runID, account, storeID, spaceID string) (Counts, error)
	PutReport(ctx context.Context, r Report) error
	Reports(ctx context.Context, f ReportFilter) ([]Report, error)
	Runs
	Verdicts
}

// Truncate is the precision the log keeps (PostgreSQL's microseconds),
// applied by every implementation so they agree.
func Truncate(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// PageKey is the position of a row in the order of Results; page tokens
// encode it.
type PageKey struct {
	RunID, Account, StoreID, SpaceID, ContentID string
}

// KeyOf returns the position of r.
func KeyOf(r Row) PageKey {
	return PageKey{RunID: r.RunID, Account: r.Account, StoreID: r.StoreID, SpaceID: r.SpaceID, ContentID: r.ContentID}
}

// Less orders keys field by field, byte-wise.
func (k PageKey) Less(o PageKey) bool {
	a := [5]string{k.RunID, k.Account, k.StoreID, k.SpaceID, k.ContentID}
	b := [5]string{o.RunID, o.Account, o.StoreID, o.SpaceID, o.ContentID}
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// EncodeToken returns the page token for "after k". Implementations share
// it so a token is stable across them.
func EncodeToken(k PageKey) string {
	tok, _ := paging.EncodeToken([5]string{k.RunID, k.Account, k.StoreID, k.SpaceID, k.ContentID}) // strings always encode
	return tok
}

// DecodeToken reads a token made by EncodeToken; ok is false for "" (from
// the start). A malformed token wraps ErrBadPageToken.
func DecodeToken(tok string) (k PageKey, ok bool, err error) {
	if tok == "" {
		return PageKey{}, false, nil
	}
	var a [5]string
	if err := paging.DecodeToken(tok, &a); err != nil {
		return PageKey{}, false, fmt.Errorf("bitlog: %w", err)
	}
	return PageKey{RunID: a[0], Account: a[1], StoreID: a[2], SpaceID: a[3], ContentID: a[4]}, true, nil
}
