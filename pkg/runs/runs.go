package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/millfleet/mill/pkg/task"
)

// ErrNoRun: no producer recorded such a run. An outcome claiming it is
// refused and changes nothing.
var ErrNoRun = errors.New("runs: no such run")

// ErrInvalid wraps every validation error.
var ErrInvalid = errors.New("runs: invalid")

// Producers, as the looping producers name themselves (looping.Config.Kind).
const (
	ProducerDup   = "dupproducer"
	ProducerBit   = "bitproducer"
	ProducerStats = "statsproducer"
)

// ProducerOf returns the producer whose runs count tasks of type t, or ""
// for a type no producer enqueues (AUDIT, BIT_ERROR, NOOP): such tasks are
// never recorded against a run, whatever runId they carry.
func ProducerOf(t task.Type) string {
	switch t {
	case task.TypeDup:
		return ProducerDup
	case task.TypeBit, task.TypeBitReport:
		return ProducerBit
	case task.TypeStorageStats:
		return ProducerStats
	}
	return ""
}

// MaxIDLen bounds a run ID (a producer's is 16 bytes: 20260101T000000Z).
const MaxIDLen = 64

// Run is a producer's record of one of its runs (one pass), keyed by
// (Producer, ID). Only producers write it (Store.Start); a task message
// cannot make one.
type Run struct {
	Producer string // required: ProducerDup, ProducerBit, ProducerStats
	ID       string // required: the run's start in UTC (looping.State.RunID)
	// Scope describes what the run covers (e.g. "3 accounts, 7 spaces").
	Scope string
	// Started is when the run began; zero means now.
	Started time.Time
}

// Validate reports a missing or malformed field (wrapping ErrInvalid).
func (r Run) Validate() error {
	var errs []error
	if r.Producer == "" {
		errs = append(errs, fmt.Errorf("%w: run %q: no producer", ErrInvalid, r.ID))
	}
	if err := CheckID(r.ID); err != nil {
		errs = append(errs, err)
	}
	if len(r.Scope) > MaxText || !utf8.ValidString(r.Scope) {
		errs = append(errs, fmt.Errorf("%w: run %q: scope too long or not UTF-8", ErrInvalid, r.ID))
	}
	return errors.Join(errs...)
}

// CheckID reports a run ID that no producer makes: empty, longer than
// MaxIDLen, or with other than letters, digits, '-', '_', '.' and ':'.
func CheckID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("%w: run ID of %d bytes (want 1..%d)", ErrInvalid, len(id), MaxIDLen)
	}
	for _, c := range id {
		if !(c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("-_.:", c))) {
			return fmt.Errorf("%w: run ID %q: character %q", ErrInvalid, id, c)
		}
	}
	return nil
}

// State is what became of a task, as far as its run is concerned.
type State string

// Outcome states. Done and Dead are final: a later outcome of the same
// task changes nothing. Failed (an attempt failed and a retry is queued)
// is replaced by whatever comes next.
const (
	StateDone   State = "done"
	StateFailed State = "failed"
	StateDead   State = "dead"
)

// Final reports whether s is Done or Dead.
func (s State) Final() bool { return s == StateDone || s == StateDead }

// MaxText bounds recorded text (an error message, a reason, a scope).
const MaxText = 1000

// Outcome is what Workman observed of one task of a run.
type Outcome struct {
	Producer, RunID string
	// Key identifies the task within its run (TaskKey): a redelivered or
	// re-sent task has the same key, so it counts once.
	Key   string
	State State
	// Type and Item name the task for the report (Item: its account,
	// store, space and content ID, as task.String shows them).
	Type task.Type
	Item string
	// Reason is the dead-letter reason (workman.Reason…) and Error the
	// processor's error; clipped to MaxText.
	Reason, Error string
	Attempts      int
	// At is when the outcome was observed; zero means now.
	At time.Time
	// Requests are the AWS requests this attempt made, by "service Op"
	// (pricing.Counter.Counts: Workman's counter of the task, never the
	// task message). Record adds them to the run's, even when the outcome
	// itself changes nothing (a stale copy's requests were made too).
	Requests map[string]int64
}

// MaxRequestKinds bounds the kinds of request one outcome may carry, and
// MaxRequestKindLen the length of a kind's name ("s3 GetObject").
const (
	MaxRequestKinds   = 64
	MaxRequestKindLen = 80
)

// Validate reports a malformed outcome (wrapping ErrInvalid).
func (o Outcome) Validate() error {
	if err := CheckID(o.RunID); err != nil {
		return err
	}
	if o.Producer == "" || o.Key == "" || len(o.Key) > 128 {
		return fmt.Errorf("%w: outcome of run %s: no producer or bad key", ErrInvalid, o.RunID)
	}
	if !slices.Contains([]State{StateDone, StateFailed, StateDead}, o.State) {
		return fmt.Errorf("%w: outcome of run %s: state %q", ErrInvalid, o.RunID, o.State)
	}
	return checkRequests(o.RunID, o.Requests)
}

// CheckRequests reports request counts no counter makes (ErrInvalid).
func CheckRequests(run string, reqs map[string]int64) error { return checkRequests(run, reqs) }

// checkRequests refuses request counts no counter makes: too many kinds, a
// kind not of the form "service Op" in printable ASCII, a negative count.
func checkRequests(run string, reqs map[string]int64) error {
	if len(reqs) > MaxRequestKinds {
		return fmt.Errorf("%w: outcome of run %s: %d kinds of request (at most %d)", ErrInvalid, run, len(reqs), MaxRequestKinds)
	}
	for k, n := range reqs {
		svc, op, ok := strings.Cut(k, " ")
		if !ok || svc == "" || op == "" || len(k) > MaxRequestKindLen || n < 0 ||
			strings.ContainsFunc(k, func(r rune) bool { return r < ' ' || r > '~' }) || strings.Contains(op, " ") {
			return fmt.Errorf("%w: outcome of run %s: request count %q=%d", ErrInvalid, run, Clip(k), n)
		}
	}
	return nil
}

// Clip returns s as valid UTF-8 on one line, at most MaxText bytes.
func Clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) <= MaxText {
		return s
	}
	cut := MaxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// IgnoredProps are properties a processor adds to a re-queued copy of a
// task (the bit report's re-check count, bitreport.KeyRechecks): not part
// of the task's identity, so the copy counts as the task it continues.
var IgnoredProps = []string{"rechecks"}

// TaskKey is a task's identity within its run: a hash of its type and
// properties (not its attempts, nor IgnoredProps), so every delivery,
// retry and re-queued copy of one task has the same key, and two different
// tasks have different keys.
func TaskKey(t *task.Task) string {
	h := sha256.New()
	h.Write([]byte(t.Type))
	keys := make([]string, 0, len(t.Props))
	for k := range t.Props {
		if !slices.Contains(IgnoredProps, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "\x00%d:%s\x00%d:%s", len(k), k, len(t.Props[k]), t.Props[k])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Status is a run with its live counts.
type Status struct {
	Run
	// Enqueued counts the tasks the producer queued (a bite re-sent after
	// a crash counts once); final once Listed is set.
	Enqueued int64
	// Listed is when the producer finished the run (every task queued);
	// zero while it runs.
	Listed time.Time
	// Done, Failed and Dead count the tasks by their latest outcome
	// (Failed: retrying now).
	Done, Failed, Dead int64
	// FirstOutcome and LastOutcome bound the outcomes seen (zero: none).
	FirstOutcome, LastOutcome time.Time
	// Completed is when the completion report was made (zero: not yet),
	// and Report where it is.
	Completed time.Time
	Report    string
}

// Settled counts the tasks with a final outcome.
func (s Status) Settled() int64 { return s.Done + s.Dead }

// Left counts the queued tasks without a final outcome.
func (s Status) Left() int64 { return max(s.Enqueued-s.Settled(), 0) }

// Finished reports whether the producer finished the run and every task it
// queued has a final outcome.
func (s Status) Finished() bool { return !s.Listed.IsZero() && s.Left() == 0 }

// Rate is the settled tasks per second between the first outcome and now
// (0 before two outcomes' worth of time has passed).
func (s Status) Rate(now time.Time) float64 {
	end := now
	if s.Finished() {
		end = s.LastOutcome
	}
	d := end.Sub(s.FirstOutcome).Seconds()
	if s.FirstOutcome.IsZero() || d <= 0 {
		return 0
	}
	return float64(s.Settled()) / d
}

// ETA is how long the tasks left take at Rate; ok is false when no rate is
// known or the producer still queues (the total is not known yet).
func (s Status) ETA(now time.Time) (d time.Duration, ok bool) {
	if s.Finished() {
		return 0, true
	}
	r := s.Rate(now)
	if r <= 0 || s.Listed.IsZero() {
		return 0, false
	}
	return time.Duration(float64(s.Left()) / r * float64(time.Second)), true
}

// Store is the record of runs and their tasks' outcomes.
//
// Contract (runstest.Run holds every implementation to it):
//
//   - Start records a run (Started zero: now); a run already recorded is
//     left as it is. Invalid: ErrInvalid, nothing written.
//   - Enqueued sets how many tasks the run queued so far; Listed records
//     that the producer finished it with that many. Unknown run: ErrNoRun.
//   - Record records a task's outcome and returns the run's status after
//     it. A run no producer recorded: ErrNoRun, and nothing is written (a
//     task can claim any run ID). Idempotent by (run, Key): a task counts
//     once, by its latest outcome; a final outcome (done, dead) is never
//     replaced.
//   - Complete marks a finished run completed with its report's location,
//     and reports whether this call did it (false: not finished, or
//     already completed). Unknown run: ErrNoRun.
//   - Get returns a run's status (ErrNoRun); List the latest runs, newest
//     start first, at most limit; Failures the dead-lettered outcomes of a
//     run (then failed ones), at most limit.
//   - Attempts returns the attempts of the run's tasks by type, from
//     each task's latest outcome (at least one a task); ErrNoRun.
//   - Requests returns the sum of the Requests of every outcome Record
//     took for the run (stale ones included; {} or nil: none); ErrNoRun.
//     It is written in Record's own write, not by another request.
//   - AddRequests adds requests to the run's without an outcome (an
//     attempt that continued its task, whose outcome comes later).
//     Unknown run: ErrNoRun; malformed counts: ErrInvalid; both write
//     nothing.
//   - Safe for concurrent use.
type Store interface {
	Start(ctx context.Context, r Run) error
	Enqueued(ctx context.Context, producer, id string, n int64) error
	Listed(ctx context.Context, producer, id string, n int64, at time.Time) error
	Record(ctx context.Context, o Outcome) (Status, error)
	Complete(ctx context.Context, producer, id, report string, at time.Time) (bool, error)
	Get(ctx context.Context, producer, id string) (Status, error)
	List(ctx context.Context, limit int) ([]Status, error)
	Failures(ctx context.Context, producer, id string, limit int) ([]Outcome, error)
	Attempts(ctx context.Context, producer, id string) (map[task.Type]int64, error)
	Requests(ctx context.Context, producer, id string) (map[string]int64, error)
	AddRequests(ctx context.Context, producer, id string, requests map[string]int64) error
}

// Truncate is the time precision stores keep (PostgreSQL's microseconds).
func Truncate(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// FailureOrder is the order of Store.Failures: dead-lettered before
// failed, then by time, then key.
func FailureOrder(a, b Outcome) int {
	rank := func(s State) int {
		if s == StateDead {
			return 0
		}
		return 1
	}
	if c := rank(a.State) - rank(b.State); c != 0 {
		return c
	}
	if c := a.At.Compare(b.At); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}
