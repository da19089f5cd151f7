package fleetmember

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// Config configures a Member. Registry and Self.ID are required.
type Config struct {
	Registry fleet.Registry `validate:"required"`
	// Self is what the worker says of itself: ID, Hostname, PID,
	// InstanceID, Zone, Version, Started, Queues (full names) and Pool.
	// The rest of the record is filled in at every beat.
	Self fleet.Worker
	// QueuePrefix names Mill's queues, to find those that carry a paused
	// type (fleet.TypeQueues).
	QueuePrefix string
	// Interval between beats (fleet.DefaultInterval).
	Interval time.Duration
	// KeepLost and KeepGone are how long a record outlives its last beat
	// (fleet.DefaultKeepLost) and a clean goodbye (fleet.DefaultKeepGone).
	KeepLost, KeepGone time.Duration
	Clock              clock.Clock
	Logger             *slog.Logger
}

// defaultConfig holds the values withDefaults gives a Config's zero fields.
var defaultConfig = Config{Interval: fleet.DefaultInterval, KeepLost: fleet.DefaultKeepLost, KeepGone: fleet.DefaultKeepGone}

func (c Config) withDefaults() Config {
	defaults.Fill(&c, defaultConfig)
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	return c
}

func (c Config) validate() error {
	p := validate.Struct("fleetmember: Config", c)
	p.Require("Self.ID", c.Self.ID != "")
	p.Check(c.Interval >= 100*time.Millisecond, "Interval", c.Interval, "be at least 100ms")
	p.Check(c.KeepLost > fleet.LostAfter*c.Interval, "KeepLost", c.KeepLost,
		"be longer than %d intervals (%v), or a lost worker would vanish instead", fleet.LostAfter, fleet.LostAfter*c.Interval)
	p.Check(c.KeepGone > 0, "KeepGone", c.KeepGone, "be positive")
	return p.Err()
}

// errPaused is the cause a running task is cancelled with when its type is
// paused.
var errPaused = errors.New("fleet: task type paused")

// run is one task a worker runs.
type run struct {
	t      task.Type
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the handler has returned
}

// Member is one Workman's side of the fleet registry. It writes the
// worker's heartbeat and reads the pauses once per interval (Run), answers
// which queues are paused (QueuePaused, for workman.Config.Pauser), stops
// and hands back tasks of paused types (Middleware), and counts results
// (it is a metrics.Recorder). All methods are safe for concurrent use.
//
// Pausing a type stops receiving from the queues that carry it in Mill's
// layout (fleet.TypeQueues); a task of a paused type that arrives anyway (from
// another queue, or received before the pause was read) is handed back
// with processors.Release, a running one is cancelled and handed back, and
// the queue it came from is not received from either while the type stays
// paused (so a queue mixing types does not spin). A pause that cannot be
// read keeps the pauses last read: an outage of the registry never lifts
// a pause.
type Member struct {
	cfg Config
	log *slog.Logger

	beatMu sync.Mutex // one beat at a time
	kick   chan struct{}

	mu        sync.Mutex
	pauses    fleet.PauseSet
	pauseKeys []string
	learned   map[string]task.Type // queue → a paused type seen on it
	runs      map[*run]struct{}
	counts    map[string]fleet.Counts
	held      int
	draining  bool
	note      string
	left      bool
	failing   bool // the last beat failed (logged once)
	outages   func() []fleet.Outage
}

// NewMember validates cfg and returns a Member.
func New(cfg Config) (*Member, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Member{
		cfg: cfg, log: cfg.Logger.With("component", "fleet"),
		kick:    make(chan struct{}, 1),
		learned: map[string]task.Type{}, runs: map[*run]struct{}{}, counts: map[string]fleet.Counts{},
	}, nil
}

// Run beats at once and then every interval (and at once after Drain)
// until ctx ends. It does not say goodbye: call Leave when the worker has
// stopped.
func (m *Member) Run(ctx context.Context) {
	for {
		_ = m.Beat(ctx)
		t := m.cfg.Clock.NewTimer(m.cfg.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-m.kick:
			t.Stop()
		}
	}
}

// Beat reads the pauses, applies them, and writes the worker's record: one
// Query and one PutItem on DynamoDB. Failures are logged (once until the
// next success) and returned; the pauses last read stay in force.
func (m *Member) Beat(ctx context.Context) error {
	m.beatMu.Lock()
	defer m.beatMu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, m.cfg.Interval)
	defer cancel()
	ps, perr := m.cfg.Registry.Pauses(cctx)
	if perr == nil {
		m.apply(ps)
	}
	m.mu.Lock()
	if m.left {
		m.mu.Unlock()
		return nil
	}
	w := m.recordLocked(m.cfg.Clock.Now())
	m.mu.Unlock()
	err := errors.Join(perr, m.cfg.Registry.Put(cctx, w))
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err != nil && !m.failing:
		m.failing = true
		m.log.Warn("fleet heartbeat failed; retrying every interval (pauses last read stay in force)", "error", err, "interval", m.cfg.Interval)
	case err != nil:
		m.log.Debug("fleet heartbeat failed", "error", err)
	case m.failing:
		m.failing = false
		m.log.Info("fleet heartbeat works again")
	}
	return err
}

// SetIdentity records the EC2 instance and zone once they are known (the
// metadata service is read in the background so start-up does not wait
// for it); the next beat carries them.
func (m *Member) SetIdentity(instanceID, zone string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.Self.InstanceID, m.cfg.Self.Zone = instanceID, zone
}

// SetOutages gives the member what reports the worker's open circuits
// (workman's Manager.Outages, converted); every beat writes them, and the
// state degraded while there are any.
func (m *Member) SetOutages(f func() []fleet.Outage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outages = f
}

// Drain marks the worker as draining (note says why: a signal, an Auto
// Scaling termination, a Spot interruption) and beats at once.
func (m *Member) Drain(note string) {
	m.mu.Lock()
	m.draining, m.note = true, note
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Leave writes the record one last time with state gone, kept for
// KeepGone; later beats write nothing.
func (m *Member) Leave(ctx context.Context) error {
	m.beatMu.Lock()
	defer m.beatMu.Unlock()
	m.mu.Lock()
	m.left = true
	w := m.recordLocked(m.cfg.Clock.Now())
	m.mu.Unlock()
	w.State = fleet.StateGone
	w.Expires = w.Heartbeat.Add(m.cfg.KeepGone)
	cctx, cancel := context.WithTimeout(ctx, m.cfg.Interval)
	defer cancel()
	if err := m.cfg.Registry.Put(cctx, w); err != nil {
		m.log.Warn("fleet: could not record this worker as gone; it will show as lost", "error", err)
		return err
	}
	return nil
}

// recordLocked is the worker's record at now.
func (m *Member) recordLocked(now time.Time) fleet.Worker {
	w := m.cfg.Self
	w.Queues = slices.Clone(w.Queues)
	w.Heartbeat, w.Interval, w.Expires = now, m.cfg.Interval, now.Add(m.cfg.KeepLost)
	w.Held = m.held
	w.Running = map[string]int{}
	for r := range m.runs {
		w.Running[string(r.t)]++
	}
	w.Counts = make(map[string]fleet.Counts, len(m.counts))
	for t, c := range m.counts {
		w.Counts[t] = c
	}
	w.Pauses = slices.Clone(m.pauseKeys)
	if m.outages != nil {
		w.Outages = m.outages()
	}
	w.State, w.Note = fleet.StateRunning, ""
	switch {
	case m.draining:
		w.State, w.Note = fleet.StateDraining, m.note
	case len(w.Queues) > 0 && !slices.ContainsFunc(w.Queues, func(q string) bool { return !m.queuePausedLocked(q) }):
		w.State = fleet.StatePaused
	case len(w.Outages) > 0:
		w.State = fleet.StateDegraded
	}
	return w
}

// apply puts ps in force: tasks of newly paused types are no longer
// started, running ones are cancelled (and handed back by the middleware)
// and waited for, at most one interval, so that once apply returns (and
// the beat acknowledges the pause) no task of a paused type completes on
// this worker; queues learned for resumed types are received from again.
func (m *Member) apply(ps []fleet.Pause) {
	keys := make([]string, len(ps))
	for i, p := range ps {
		keys[i] = p.Key()
	}
	set := fleet.NewPauseSet(ps, m.cfg.QueuePrefix)
	m.mu.Lock()
	if slices.Equal(keys, m.pauseKeys) {
		m.mu.Unlock()
		return
	}
	var added []fleet.Pause
	for _, p := range ps {
		if !slices.Contains(m.pauseKeys, p.Key()) {
			added = append(added, p)
		}
	}
	for _, k := range m.pauseKeys {
		if !slices.Contains(keys, k) {
			m.log.Info("fleet pause lifted", "pause", k)
		}
	}
	m.pauses, m.pauseKeys = set, keys
	for q, t := range m.learned {
		if !set.TypePaused(t) {
			delete(m.learned, q)
		}
	}
	var stopped []*run
	for r := range m.runs {
		if set.TypePaused(r.t) {
			r.cancel(errPaused)
			stopped = append(stopped, r)
		}
	}
	m.mu.Unlock()
	if len(stopped) > 0 {
		t := m.cfg.Clock.NewTimer(m.cfg.Interval)
		waiting := len(stopped)
	wait:
		for _, r := range stopped {
			select {
			case <-r.done:
				waiting--
			case <-t.C():
				break wait
			}
		}
		t.Stop()
		if waiting > 0 {
			m.log.Warn("fleet pause: running tasks of a paused type did not stop within one interval; they may still complete", "tasks", waiting)
		}
	}
	for _, p := range added {
		m.log.Warn("fleet pause in force", "pause", p.String(), "running_tasks_stopped", len(stopped))
	}
}

// Pauses returns the keys of the pauses in force, as last read.
func (m *Member) Pauses() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.pauseKeys)
}

// QueuePaused implements workman.Pauser: the queue itself is paused,
// carries a paused type in Mill's layout, or was seen carrying one.
func (m *Member) QueuePaused(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.queuePausedLocked(name)
}

func (m *Member) queuePausedLocked(name string) bool {
	if m.pauses.QueuePaused(name) {
		return true
	}
	t, ok := m.learned[name]
	return ok && m.pauses.TypePaused(t)
}

// TypePaused reports whether tasks of t are paused.
func (m *Member) TypePaused(t task.Type) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pauses.TypePaused(t)
}

// Middleware hands back tasks of paused types (processors.Release) instead
// of running them, cancels running ones when their type is paused, and
// keeps the running tasks by type for the heartbeat. Put it outermost, so
// the logging and metrics middleware see a stopped task as cancelled.
func (m *Member) Middleware() processors.Middleware {
	return func(next processors.Handler) processors.Handler {
		return processors.HandlerFunc(func(ctx context.Context, t *task.Task) error {
			rctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			r := &run{t: t.Type, cancel: cancel, done: make(chan struct{})}
			m.mu.Lock()
			if m.pauses.TypePaused(t.Type) {
				q := processors.QueueName(ctx)
				if _, seen := m.learned[q]; q != "" && !seen && !m.pauses.QueuePaused(q) {
					m.learned[q] = t.Type
					m.log.Warn("fleet pause: a queue carries a paused type; not receiving from it while the type is paused", "queue", q, "task_type", string(t.Type))
				}
				m.mu.Unlock()
				return processors.Release("task type " + string(t.Type) + " is paused")
			}
			m.runs[r] = struct{}{}
			m.mu.Unlock()
			err := next.Handle(rctx, t)
			m.mu.Lock()
			delete(m.runs, r)
			m.mu.Unlock()
			close(r.done)
			if err != nil && errors.Is(context.Cause(rctx), errPaused) && ctx.Err() == nil {
				return processors.Release("task type " + string(t.Type) + " was paused while it ran")
			}
			return err
		})
	}
}

// TaskDone implements metrics.Recorder: a success counts as processed,
// any other result but a hand-back, a cancellation or an outage of a
// dependency as failed.
func (m *Member) TaskDone(t task.Type, result string, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counts[string(t)]
	switch result {
	case processors.ResultSuccess:
		c.Processed++
	case processors.ResultReleased, processors.ResultCanceled, processors.ResultUnavailable, processors.ResultThrottled:
		return
	default:
		c.Failed++
	}
	m.counts[string(t)] = c
}

// DeadLettered implements metrics.Recorder.
func (m *Member) DeadLettered(t task.Type, _ string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counts[string(t)]
	c.DeadLettered++
	m.counts[string(t)] = c
}

// Received implements metrics.Recorder (nothing to count).
func (m *Member) Received(string, int) {}

// InFlight implements metrics.Recorder: the messages held or running.
func (m *Member) InFlight(delta int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.held += delta
}
