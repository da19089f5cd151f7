package looping

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// runner is the state of one invocation.
type runner struct {
	*Loop
	ctx      context.Context
	sum      *Summary
	st       *State
	info     RunInfo
	progress progress
	emitted  int // tasks emitted by the current step
	pending  []queue.SendEntry
	pendMeta []countKey
	inflight inflight // batches being sent (sender.go)
	morsel   *Morsel
	// sendFailed is set when a send to the queue failed: the queue is
	// every morsel's, so that is the run's failure, not the morsel's.
	sendFailed bool
}

type countKey struct{ typ, account string }

func (r *runner) err() error {
	if cause := context.Cause(r.ctx); cause != nil {
		return fmt.Errorf("looping: %s: %w", r.cfg.Kind, cause)
	}
	return nil
}

func (r *runner) run() error {
	c := r.cfg
	st, err := c.State.Load(r.ctx)
	switch {
	case errors.Is(err, ErrNoState):
		st = &State{Version: StateVersion, Kind: c.Kind}
	case err != nil:
		return err
	case st.Kind != c.Kind:
		return fmt.Errorf("looping: %s: state %s belongs to %q", c.Kind, c.State, st.Kind)
	}
	if st.Queued == nil { // omitted from the JSON while empty
		st.Queued = Counts{}
	}
	r.st = st
	now := c.Clock.Now()
	if !st.InRun() {
		if due := c.due(st, now); due.IsZero() || now.Before(due) {
			r.sum.Stopped = StopNotDue
			r.sum.NextRun = due
			r.sum.RunID = st.RunID
			r.sum.MorselsDone, r.sum.MorselsTotal = st.MorselsDone(), len(st.Morsels)
			r.sum.Skipped = skipped(st.Morsels)
			r.sum.Failed = failed(st.Morsels)
			return nil
		}
		if err := r.startRun(now); err != nil {
			return err
		}
	}
	if err := r.recordStart(); err != nil {
		return err
	}
	st.Invocations++
	r.info = RunInfo{Kind: c.Kind, ID: st.RunID, Start: st.CurrentRunStart}
	r.sum.RunID, r.sum.RunStart, r.sum.NextRun = st.RunID, st.CurrentRunStart, st.NextRunStart
	r.progress = newProgress(c, r.sum, len(st.Morsels), st.MorselsDone())
	defer r.progress.finish()
	r.log.Info("producer run in progress", "run_id", st.RunID, "invocation", st.Invocations,
		"morsels", len(st.Morsels), "morsels_done", st.MorselsDone())

	full, err := r.nibble()
	r.sum.MorselsDone, r.sum.MorselsTotal = st.MorselsDone(), len(st.Morsels)
	r.sum.Skipped = skipped(st.Morsels)
	r.sum.Failed = failed(st.Morsels)
	r.sum.RunQueued = st.Queued.Clone()
	if err != nil {
		return err
	}
	if full {
		r.sum.Stopped = StopQueueFull
		return r.save()
	}
	end := c.Clock.Now()
	if err := r.recordListed(end); err != nil {
		return err
	}
	st.LastRunStart, st.LastRunEnd = st.CurrentRunStart, end
	st.CurrentRunStart = time.Time{}
	st.NextRunStart = c.next(st.LastRunStart)
	r.sum.Stopped = StopDone
	r.sum.NextRun = st.NextRunStart
	return r.save()
}

// next is when the run after one that started at start is due, as the
// state records it: the frequency's time, on the start time of its day
// when StartAt is set; zero when looping is disabled.
func (c Config) next(start time.Time) time.Time {
	n := c.Frequency.Next(start)
	if n.IsZero() || c.StartAt.IsZero() {
		return n
	}
	return c.StartAt.On(n)
}

// due is when a new run may start, seen at now: after the last run, the
// frequency's time (zero: never); the first run at once. With StartAt,
// that time moved to the start time (StartAt.Due).
func (c Config) due(st *State, now time.Time) time.Time {
	base := now
	if !st.LastRunStart.IsZero() {
		if base = c.Frequency.Next(st.LastRunStart); base.IsZero() {
			return base
		}
	}
	if c.StartAt.IsZero() {
		return base
	}
	return c.StartAt.Due(base, now, c.StartWindow)
}

func (r *runner) startRun(now time.Time) error {
	c := r.cfg
	st := r.st
	runID := now.UTC().Format("20060102T150405Z")
	ms, err := c.Producer.Morsels(r.ctx, RunInfo{Kind: c.Kind, ID: runID, Start: now})
	if err != nil {
		return fmt.Errorf("looping: %s: list morsels: %w", c.Kind, err)
	}
	_, deleter := c.Producer.(Deleter)
	seen := map[string]bool{}
	var errs []error
	for i := range ms {
		m := &ms[i]
		if m.ID == "" || seen[m.ID] {
			errs = append(errs, fmt.Errorf("morsel %d: id %q empty or repeated", i, m.ID))
		}
		seen[m.ID] = true
		out := m.Skipped != "" || m.Failed != ""
		*m = Morsel{ID: m.ID, Data: m.Data, DeletesDone: !deleter || out, Skipped: m.Skipped, Failed: m.Failed, Done: out}
		if m.Failed != "" {
			m.Failed = clip(m.Failed)
			r.sum.NewlyFailed++
			r.log.Error("part of the sweep could not be listed; the run goes on without it and the next run retries it",
				"morsel", m.ID, "error", m.Failed)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("looping: %s: list morsels: %w", c.Kind, err)
	}
	st.RunID = runID
	st.CurrentRunStart = now
	st.NextRunStart = c.next(now)
	st.Morsels = ms
	st.Queued = Counts{}
	st.Bites, st.Invocations, st.Cursor = 0, 0, 0
	attrs := []any{"run_id", runID, "morsels", len(ms)}
	if n := len(skipped(ms)); n > 0 {
		attrs = append(attrs, "skipped", n)
	}
	if n := len(failed(ms)); n > 0 {
		attrs = append(attrs, "failed", n)
	}
	if !st.NextRunStart.IsZero() {
		attrs = append(attrs, "next_run", st.NextRunStart)
	}
	r.log.Info("producer run started", attrs...)
	// Save at once, so a crash before the first bite resumes this run
	// rather than listing the morsels again.
	return r.save()
}

// nibble takes bites round-robin, starting with the morsel whose turn it
// is (State.Cursor), until every morsel is done (false) or the queue is
// full (true).
func (r *runner) nibble() (full bool, err error) {
	deleter, _ := r.cfg.Producer.(Deleter)
	ms := r.st.Morsels
	for r.st.MorselsDone() < len(ms) {
		i := r.st.Cursor % len(ms)
		m := &ms[i]
		if !m.Done && !m.DeletesDone {
			if full, err := r.step(m, true, deleter); full || err != nil {
				return full, err
			}
		}
		// A delete step that failed leaves DeletesDone unset: the bite
		// waits for the delete step's retry at the morsel's next turn.
		if !m.Done && m.DeletesDone {
			if full, err := r.step(m, false, deleter); full || err != nil {
				return full, err
			}
		}
		r.st.Cursor = (i + 1) % len(ms)
	}
	return false, nil
}

// step checks the queue, runs one delete step or bite of m, sends its
// tasks, applies the result and saves the state.
func (r *runner) step(m *Morsel, deletes bool, d Deleter) (full bool, err error) {
	c := r.cfg
	if err := r.err(); err != nil {
		return false, err
	}
	depth, err := c.Queue.Depth(r.ctx)
	if err != nil {
		return false, fmt.Errorf("looping: %s: queue depth: %w", c.Kind, err)
	}
	if depth.Visible >= c.MaxQueueSize {
		r.sum.Depth = depth.Visible
		r.log.Info("queue full; stopping until the next invocation", "queue", c.Queue.Name(),
			"visible", depth.Visible, "max", c.MaxQueueSize)
		return true, nil
	}
	r.morsel, r.emitted = m, 0
	before := m.Marker
	if deletes {
		before = m.DeletesMarker
	}
	var res BiteResult
	if deletes {
		res, err = d.Deletes(r.ctx, r.info, *m, c.BiteSize, r.emit)
	} else {
		res, err = c.Producer.Bite(r.ctx, r.info, *m, c.BiteSize, r.emit)
	}
	if err == nil {
		err = r.flush()
	}
	if derr := r.drain(); err == nil {
		err = derr
	}
	r.morsel = nil
	what := "bite"
	if deletes {
		what = "deletes"
	}
	if err != nil {
		r.pending, r.pendMeta = nil, nil
		err = fmt.Errorf("looping: %s: morsel %q: %s: %w", c.Kind, m.ID, what, err)
	} else if !res.Done && r.emitted == 0 && res.Marker == before {
		err = fmt.Errorf("looping: %s: morsel %q: %s at marker %q made no progress (no tasks, same marker, not done)", c.Kind, m.ID, what, before)
	}
	if err != nil {
		if r.sendFailed || r.err() != nil {
			// The queue, the lease or the invocation failed: every
			// morsel would fail the same way.
			return false, err
		}
		return false, r.fail(m, what, err)
	}
	m.Failures = 0
	if deletes {
		m.DeletesMarker, m.DeletesDone = res.Marker, res.Done
	} else {
		m.Marker, m.Done = res.Marker, res.Done
		// The turn passes to the next morsel with this save, so a later
		// invocation resumes the interleaving where this one stopped.
		r.st.Cursor = (r.st.Cursor%len(r.st.Morsels) + 1) % len(r.st.Morsels)
	}
	if res.Data != nil {
		m.Data = res.Data
	}
	r.st.Bites++
	r.sum.Bites++
	if err := r.save(); err != nil {
		return false, err
	}
	if r.emitted > 0 {
		r.recordEnqueued()
	}
	r.progress.update(r.sum, r.st.MorselsDone())
	return false, nil
}

// emit is the Emit handed to the producer.
func (r *runner) emit(ctx context.Context, tasks ...*task.Task) error {
	if r.morsel == nil {
		return errors.New("looping: emit called outside a bite")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, t := range tasks {
		t = r.stampRun(t)
		b, err := task.Encode(t, r.cfg.Format)
		if err != nil {
			return fmt.Errorf("encode %v: %w", t, err)
		}
		r.pending = append(r.pending, queue.SendEntry{Body: b, Group: queue.GroupFor(t.Get(task.KeyAccount))})
		r.pendMeta = append(r.pendMeta, countKey{string(t.Type), t.Get(task.KeyAccount)})
		r.emitted++
		if len(r.pending) == queue.MaxBatch {
			if err := r.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// fail records a failed step of m (err is the step's error) and passes
// the turn to the next morsel: the step is retried at m's next turn, and
// after Config.MorselAttempts failures in a row m is given up for this run
// (done, with Failed set). The tasks a failed bite sent before failing may
// be sent again by the retry, never skipped. The state is saved.
func (r *runner) fail(m *Morsel, what string, err error) error {
	c := r.cfg
	m.Failures++
	r.log.Warn("morsel step failed", "morsel", m.ID, "step", what, "failures", m.Failures,
		"attempts", c.MorselAttempts, "error", err)
	if m.Failures >= c.MorselAttempts {
		m.Failed, m.Done, m.DeletesDone = clip(err.Error()), true, true
		r.sum.NewlyFailed++
		r.log.Error("morsel given up for this run; the next run retries it", "morsel", m.ID,
			"failures", m.Failures, "error", err)
	}
	r.st.Cursor = (r.st.Cursor%len(r.st.Morsels) + 1) % len(r.st.Morsels)
	if err := r.save(); err != nil {
		return err
	}
	r.progress.update(r.sum, r.st.MorselsDone())
	return nil
}

// maxReason bounds a failure's recorded text (a store's error message).
const maxReason = 1000

// clip makes a failure's text fit to record: valid UTF-8 on one line
// (control characters become spaces, so an error cannot add lines to the
// summary), at most maxReason bytes.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func (r *runner) save() error {
	r.st.SavedAt = r.cfg.Clock.Now()
	if r.st.Queued == nil {
		r.st.Queued = Counts{}
	}
	// A cancelled invocation still records the bites it completed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), saveTimeout)
	defer cancel()
	return r.cfg.State.Save(ctx, r.st)
}
