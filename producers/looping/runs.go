package looping

import (
	"context"
	"fmt"
	"time"

	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/task"
)

// RunRecorder is the fleet's record of runs (pkg/runs; *runs.Recorder):
// Config.Runs, when set, is told of every run, so Workman can count its
// tasks' outcomes against it.
//
//   - Start, at every invocation that works on a run, before its first
//     bite (a repeated start changes nothing);
//   - Enqueued, after each step that sent tasks: the run's tasks so far
//     (State.Queued of the types the producer's runs count,
//     runs.ProducerOf); a failure is logged, the next step sets it again;
//   - Listed, when the last morsel is done, before the state records the
//     run's end: the run's final count (a failure fails the invocation,
//     and the next one reports it again).
type RunRecorder interface {
	Start(ctx context.Context, r runs.Run) error
	Enqueued(ctx context.Context, producer, id string, n int64) error
	Listed(ctx context.Context, producer, id string, n int64, at time.Time) error
}

// stampRun puts the run's ID on a task that has none.
func (r *runner) stampRun(t *task.Task) *task.Task {
	if t.RunID() != "" || r.info.ID == "" {
		return t
	}
	t = t.Clone()
	t.Set(task.KeyRunID, r.info.ID)
	return t
}

// counted is how many tasks of the run its record counts.
func (r *runner) counted() int64 {
	var n int64
	for typ, m := range r.st.Queued {
		if runs.ProducerOf(task.Type(typ)) == r.cfg.Kind {
			for _, v := range m {
				n += v
			}
		}
	}
	return n
}

func (r *runner) recordStart() error {
	if r.cfg.Runs == nil {
		return nil
	}
	st := r.st
	scope := fmt.Sprintf("%d morsels", len(st.Morsels))
	if n := len(skipped(st.Morsels)); n > 0 {
		scope += fmt.Sprintf(", %d skipped", n)
	}
	run := runs.Run{Producer: r.cfg.Kind, ID: st.RunID, Scope: scope, Started: st.CurrentRunStart}
	if err := r.cfg.Runs.Start(r.ctx, run); err != nil {
		return fmt.Errorf("looping: %s: record run %s: %w", r.cfg.Kind, st.RunID, err)
	}
	return nil
}

func (r *runner) recordEnqueued() {
	if r.cfg.Runs == nil {
		return
	}
	if err := r.cfg.Runs.Enqueued(r.ctx, r.cfg.Kind, r.st.RunID, r.counted()); err != nil {
		r.log.Warn("could not record the run's task count; the next step records it again", "run_id", r.st.RunID, "error", err)
	}
}

func (r *runner) recordListed(at time.Time) error {
	if r.cfg.Runs == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), releaseTimeout)
	defer cancel()
	if err := r.cfg.Runs.Listed(ctx, r.cfg.Kind, r.st.RunID, r.counted(), at); err != nil {
		return fmt.Errorf("looping: %s: record the end of run %s: %w", r.cfg.Kind, r.st.RunID, err)
	}
	return nil
}
