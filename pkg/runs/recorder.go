package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/task"
)

// Recorder is what producers and Workman use: the Store, and the
// completion of a finished run (its report and notification).
type Recorder struct {
	Store Store
	// Reports keeps the completion reports (nil: none are written, and a
	// finished run is marked completed without one).
	Reports Reports
	// Notifier announces completed runs (default notify.Log).
	Notifier notify.Notifier
	// MaxFailures bounds the failures a report lists (DefaultMaxFailures).
	MaxFailures int
	// Prices prices a report's requests (Estimate; nil: pricing.Default()).
	Prices *pricing.Table
	Clock  clock.Clock
	Logger *slog.Logger
}

// Reports is the writing half of a reportstore.Store (s3reportstore, the
// reports bucket; fsreportstore in the dev mode), whose contract Put
// follows.
type Reports interface {
	Put(ctx context.Context, key string, r io.ReadSeeker, size int64) (location string, err error)
}

// DefaultMaxFailures is the most failures a completion report lists.
const DefaultMaxFailures = 10000

// Start records a run (Store.Start).
func (r *Recorder) Start(ctx context.Context, run Run) error { return r.Store.Start(ctx, run) }

// Enqueued sets a run's queued count (Store.Enqueued).
func (r *Recorder) Enqueued(ctx context.Context, producer, id string, n int64) error {
	return r.Store.Enqueued(ctx, producer, id, n)
}

// Listed records that the producer queued every task of the run, then
// completes the run if every task already has its outcome (a run of no
// task, or one whose tasks all ran before the producer finished).
func (r *Recorder) Listed(ctx context.Context, producer, id string, n int64, at time.Time) error {
	if err := r.Store.Listed(ctx, producer, id, n, at); err != nil {
		return err
	}
	st, err := r.Store.Get(ctx, producer, id)
	if err != nil {
		return err
	}
	return r.finish(ctx, st)
}

// Counted returns the producer whose run counts t, or "" when no run
// counts it: a type no producer queues, no run ID, or a BIT of an at-rest
// checksum job (queued by the job's follow-up, not counted by the run's
// bites).
func Counted(t *task.Task) string {
	if t == nil || t.RunID() == "" || t.Get(task.KeyAtRestJob) != "" {
		return ""
	}
	return ProducerOf(t.Type)
}

// Observe records the outcome of t against the run it claims. A task no
// run counts is ignored; a claim of a run no producer recorded, or a
// malformed one, is refused: logged, nothing written, and nil returned (a
// forged run ID is not the task's failure). Other errors (the store is
// down) are returned. When the outcome finishes the run, Observe
// completes it.
func (r *Recorder) Observe(ctx context.Context, t *task.Task, state State, reason, errText string, attempts int) error {
	return r.ObserveCounted(ctx, t, state, reason, errText, attempts, nil)
}

// ObserveCounted is Observe of an attempt that made requests (by "service
// Op": Workman's pricing.Counter of the attempt, never the task's
// message), added to the run's (Store.Record).
func (r *Recorder) ObserveCounted(ctx context.Context, t *task.Task, state State, reason, errText string, attempts int, requests map[string]int64) error {
	producer := Counted(t)
	if producer == "" {
		return nil
	}
	o := Outcome{Producer: producer, RunID: t.RunID(), Key: TaskKey(t), State: state, Type: t.Type,
		Item: itemOf(t), Reason: reason, Error: errText, Attempts: attempts, At: r.clock().Now(), Requests: requests}
	st, err := r.Store.Record(ctx, o)
	if errors.Is(err, ErrNoRun) || errors.Is(err, ErrInvalid) {
		r.logger().Debug("task claims a run no producer recorded; its outcome is not counted",
			"producer", producer, "run_id", Clip(t.RunID()), "error", err)
		return nil
	}
	if err != nil {
		return err
	}
	return r.finish(ctx, st)
}

// Continued adds the requests of an attempt at t that queued a
// continuation of its task (processors.Continue: no outcome yet) to the
// run t claims. It is best effort: a task no run counts, a run no
// producer recorded and a store error are logged, never returned (the
// continuation is already queued; the message must not come back).
func (r *Recorder) Continued(ctx context.Context, t *task.Task, requests map[string]int64) {
	producer := Counted(t)
	if producer == "" || len(requests) == 0 {
		return
	}
	if err := r.Store.AddRequests(ctx, producer, t.RunID(), requests); err != nil {
		r.logger().Debug("the requests of a continued task are not counted", "producer", producer,
			"run_id", Clip(t.RunID()), "error", err)
	}
}

func itemOf(t *task.Task) string {
	s := ""
	for _, k := range []string{task.KeyAccount, task.KeyStoreID, task.KeySpaceID, task.KeyContentID} {
		if v := t.Get(k); v != "" {
			if s != "" {
				s += "/"
			}
			s += v
		}
	}
	return s
}

func (r *Recorder) clock() clock.Clock { return clock.Or(r.Clock) }

func (r *Recorder) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.Default()
	}
	return r.Logger
}

// finish completes a finished run that is not completed yet: report first
// (a crash before Complete writes it again, the same), then Complete, and
// only the caller whose Complete marked the run notifies.
func (r *Recorder) finish(ctx context.Context, st Status) error {
	if !st.Finished() || !st.Completed.IsZero() {
		return nil
	}
	limit := r.MaxFailures
	if limit <= 0 {
		limit = DefaultMaxFailures
	}
	fails, err := r.Store.Failures(ctx, st.Producer, st.ID, limit)
	if err != nil {
		return err
	}
	attempts, err := r.Store.Attempts(ctx, st.Producer, st.ID)
	if err != nil {
		return err
	}
	counted, err := r.Store.Requests(ctx, st.Producer, st.ID)
	if err != nil {
		return err
	}
	now := Truncate(r.clock().Now())
	rep := NewReport(st, fails, now)
	rep.Cost = CountedCost(counted, attempts, r.Prices)
	rep.Estimate = Estimate(attempts, r.Prices)
	loc := ""
	if r.Reports != nil {
		if loc, err = rep.Store(ctx, r.Reports); err != nil {
			return fmt.Errorf("runs: report of %s run %s: %w", st.Producer, st.ID, err)
		}
	}
	ok, err := r.Store.Complete(ctx, st.Producer, st.ID, loc, now)
	if err != nil || !ok {
		return err
	}
	r.logger().Info("run completed", "producer", st.Producer, "run_id", st.ID, "done", st.Done,
		"dead_lettered", st.Dead, "report", loc)
	n := notify.Or(r.Notifier, r.logger())
	if err := n.Notify(ctx, rep.Event(loc)); err != nil {
		r.logger().Error("could not notify a completed run", "producer", st.Producer, "run_id", st.ID, "error", err)
	}
	return nil
}
