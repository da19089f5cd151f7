package looping

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/millfleet/mill/internal/validate"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// Defaults of Config.
const (
	DefaultMaxQueueSize     = 10000
	DefaultBiteSize         = 1000
	DefaultLeaseTTL         = 2 * time.Minute
	DefaultProgressInterval = 30 * time.Second
)

// releaseTimeout bounds the lease release at the end of a run, which runs
// even when the run's context was cancelled.
const releaseTimeout = 10 * time.Second

// Config configures a Loop. Kind, Producer, Queue, State and Lease are
// required; every other field has a documented default.
type Config struct {
	// Kind names the producer ("dupproducer", "bitproducer"): the lease
	// name and the state's kind.
	Kind string
	// Producer makes the morsels and bites.
	Producer Producer
	// Queue receives the tasks, and its visible depth is checked against
	// MaxQueueSize before each bite.
	Queue queue.Queue
	// State keeps the state between invocations.
	State StateStore
	// Lease ensures one invocation of Kind runs at a time.
	Lease lease.Lease
	// Holder identifies this invocation to the lease (default
	// lease.Self(now)).
	Holder lease.Holder
	// LeaseTTL is how long the lease lasts without renewal (default
	// DefaultLeaseTTL); it is renewed every LeaseTTL/3 while running.
	LeaseTTL time.Duration
	// Frequency between run starts (zero: one run, then no more).
	Frequency Frequency
	// StartAt, when set, is the time of day runs begin at: a run is due
	// at the start time of the day the frequency makes it due (and the
	// first run at the next start time), and begins at an invocation no
	// later than StartWindow after it; an invocation after that leaves it
	// for the next day's start time. It needs a frequency of at least a
	// day (or zero).
	StartAt StartAt
	// StartWindow (default DefaultStartWindow): see StartAt.
	StartWindow time.Duration
	// Notifier is told when a run completes and when an invocation fails
	// (notify.EventRunCompleted, notify.EventRunFailed; default
	// notify.Log). An invocation stopped by its context being cancelled
	// (a shutdown) is not a failure to announce; a failed notification is
	// logged and changes nothing else.
	Notifier notify.Notifier
	// MaxQueueSize stops the invocation when the queue has at least this
	// many visible messages (default DefaultMaxQueueSize).
	MaxQueueSize int64
	// BiteSize is the most items one bite covers (default
	// DefaultBiteSize).
	BiteSize int
	// Format is the wire format of the tasks (default task.FormatJSON,
	// the zero value).
	Format task.Format
	// Clock (default the real clock).
	Clock clock.Clock
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Progress selects the progress display (default ProgressAuto: a bar
	// when ProgressOutput is a terminal, log lines otherwise).
	Progress ProgressMode
	// ProgressOutput is where the bar is drawn (default os.Stderr).
	ProgressOutput io.Writer
	// ProgressInterval is the period of progress log lines (default
	// DefaultProgressInterval).
	ProgressInterval time.Duration
}

// WithDefaults returns c with unset optional fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.Clock = clock.Or(c.Clock)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Holder.ID == "" {
		c.Holder = lease.Self(c.Clock.Now())
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.MaxQueueSize == 0 {
		c.MaxQueueSize = DefaultMaxQueueSize
	}
	if c.BiteSize == 0 {
		c.BiteSize = DefaultBiteSize
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.StartWindow == 0 {
		c.StartWindow = DefaultStartWindow
	}
	c.Notifier = notify.Or(c.Notifier, c.Logger)
	return c
}

func (c Config) validate() error {
	p := validate.New("looping: Config")
	p.Require("Kind", c.Kind != "")
	p.Require("Producer", c.Producer != nil)
	p.Require("Queue", c.Queue != nil)
	p.Require("State", c.State != nil)
	p.Require("Lease", c.Lease != nil)
	p.Check(c.LeaseTTL >= 3*time.Second, "LeaseTTL", c.LeaseTTL, "be at least 3s")
	p.Check(c.MaxQueueSize >= 0, "MaxQueueSize", c.MaxQueueSize, "not be negative")
	p.Check(c.BiteSize >= 0, "BiteSize", c.BiteSize, "not be negative")
	p.Check(c.ProgressInterval >= 0, "ProgressInterval", c.ProgressInterval, "not be negative")
	p.Check(c.Frequency.N == 0 || (c.Frequency.N > 0 && (c.Frequency.Unit == Months || unitDuration[c.Frequency.Unit] != 0)),
		"Frequency", fmt.Sprintf("%+v", c.Frequency), "be a positive count of a known unit")
	p.Check(c.StartAt.IsZero() || c.Frequency.N <= 0 || c.Frequency.Unit == Days || c.Frequency.Unit == Months,
		"StartAt", c.StartAt, "go with a frequency of days or months, not %s", c.Frequency)
	p.Check(c.StartWindow >= time.Minute && c.StartWindow < 24*time.Hour, "StartWindow", c.StartWindow, "be at least a minute and under a day")
	_, err := task.Encode(task.New(task.TypeNoop, nil), c.Format)
	p.Add("Format", err)
	return p.Err()
}

// Loop runs a looping producer. Create it with New; Run it once per
// invocation.
type Loop struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg (every problem at once) and returns a Loop.
func New(cfg Config) (*Loop, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("looping: config: %w", err)
	}
	return &Loop{cfg: cfg, log: cfg.Logger.With("producer", cfg.Kind)}, nil
}

// Run is one invocation: take the lease, load the state, start a run when
// one is due (or resume the one in progress), and take bites until every
// morsel is done or the queue is full.
//
// The Summary says why it stopped. Not being due, the lease being held by
// someone else and a full queue are normal outcomes with a nil error. On an
// error (including ctx being cancelled and the lease being lost) the state
// is as saved after the last complete bite, and the next invocation resumes
// from there. The lease is released before Run returns.
func (l *Loop) Run(ctx context.Context) (sum Summary, err error) {
	c := l.cfg
	sum = Summary{Kind: c.Kind, Started: c.Clock.Now(), Queued: Counts{}}
	defer func() {
		sum.Ended = c.Clock.Now()
		if err != nil {
			sum.Stopped = StopError
			sum.Err = err
		}
		l.log.LogAttrs(context.WithoutCancel(ctx), sum.logLevel(), "producer invocation finished", sum.logAttrs()...)
		l.announce(ctx, sum)
	}()

	granted, cur, err := c.Lease.Acquire(ctx, c.Kind, c.Holder, c.LeaseTTL)
	if err != nil {
		return sum, fmt.Errorf("looping: %s: %w", c.Kind, err)
	}
	if !granted {
		sum.Stopped = StopLeaseHeld
		sum.Holder = cur
		return sum, nil
	}
	kctx, stopKeep := lease.Keep(ctx, c.Lease, c.Kind, c.Holder.ID, c.LeaseTTL, cur.Expires,
		lease.KeepOptions{Clock: c.Clock, Logger: l.log})
	defer func() {
		lost := stopKeep()
		if lost != nil {
			if err == nil {
				err = fmt.Errorf("looping: %s: %w", c.Kind, lost)
			}
			return // someone else holds it now: nothing to release
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		if rerr := c.Lease.Release(rctx, c.Kind, c.Holder.ID); rerr != nil {
			// The work is saved; an unreleased lease only delays the next
			// invocation until it expires.
			l.log.Warn("lease release failed; it will expire", "error", rerr, "ttl", c.LeaseTTL)
		}
	}()

	r := &runner{Loop: l, ctx: kctx, sum: &sum}
	return sum, r.run()
}

// announce tells the Notifier about a completed run or a failed
// invocation (not about one stopped by a cancelled context).
func (l *Loop) announce(ctx context.Context, sum Summary) {
	if sum.Stopped != StopDone && (sum.Stopped != StopError || ctx.Err() != nil) {
		return
	}
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := l.cfg.Notifier.Notify(nctx, sum.Event()); err != nil {
		l.log.Warn("notification not sent", "error", err)
	}
}

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
	morsel   *Morsel
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
			return nil
		}
		if err := r.startRun(now); err != nil {
			return err
		}
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
	r.sum.RunQueued = st.Queued.Clone()
	if err != nil {
		return err
	}
	if full {
		r.sum.Stopped = StopQueueFull
		return r.save()
	}
	st.LastRunStart, st.LastRunEnd = st.CurrentRunStart, c.Clock.Now()
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
		*m = Morsel{ID: m.ID, Data: m.Data, DeletesDone: !deleter || m.Skipped != "", Skipped: m.Skipped, Done: m.Skipped != ""}
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
		if !m.Done {
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
	var res BiteResult
	if deletes {
		res, err = d.Deletes(r.ctx, r.info, *m, r.emit)
	} else {
		res, err = c.Producer.Bite(r.ctx, r.info, *m, c.BiteSize, r.emit)
	}
	if err == nil {
		err = r.flush()
	}
	r.morsel = nil
	what := "bite"
	if deletes {
		what = "deletes"
	}
	if err != nil {
		r.pending, r.pendMeta = nil, nil
		return false, fmt.Errorf("looping: %s: morsel %q: %s: %w", c.Kind, m.ID, what, err)
	}
	if !deletes && !res.Done && r.emitted == 0 && res.Marker == before {
		return false, fmt.Errorf("looping: %s: morsel %q: bite at marker %q made no progress (no tasks, same marker, not done)", c.Kind, m.ID, before)
	}
	m.Marker = res.Marker
	m.Done = res.Done
	if deletes {
		m.DeletesDone = true
	} else {
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
		b, err := task.Encode(t, r.cfg.Format)
		if err != nil {
			return fmt.Errorf("encode %v: %w", t, err)
		}
		r.pending = append(r.pending, queue.SendEntry{Body: b})
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

// flush sends the pending tasks (at most one batch) and counts them.
func (r *runner) flush() error {
	if len(r.pending) == 0 {
		return nil
	}
	if err := r.cfg.Queue.Send(r.ctx, r.pending...); err != nil {
		return fmt.Errorf("send to %s: %w", r.cfg.Queue.Name(), err)
	}
	for _, k := range r.pendMeta {
		r.sum.Queued.Add(k.typ, k.account, 1)
		r.st.Queued.Add(k.typ, k.account, 1)
	}
	r.morsel.Queued += int64(len(r.pending))
	r.pending, r.pendMeta = r.pending[:0], r.pendMeta[:0]
	return nil
}

func (r *runner) save() error {
	r.st.SavedAt = r.cfg.Clock.Now()
	if r.st.Queued == nil {
		r.st.Queued = Counts{}
	}
	// A cancelled invocation still records the bites it completed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), releaseTimeout)
	defer cancel()
	return r.cfg.State.Save(ctx, r.st)
}
