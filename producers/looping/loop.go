package looping

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
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
	DefaultMorselAttempts   = 3
)

// releaseTimeout bounds the lease release at the end of a run, which runs
// even when the run's context was cancelled.
const releaseTimeout = 10 * time.Second

// saveTimeout bounds a state save, which also runs after a cancellation
// (the bites done are kept). A save is a few requests (the journal's
// listing, deletes, a put), each of which the SDK may retry five times
// with backoff up to 5 s: about 12 s of waiting for one request alone.
const saveTimeout = 30 * time.Second

// Config configures a Loop. Kind, Producer, Queue, State and Lease are
// required; every other field has a documented default.
type Config struct {
	// Kind names the producer ("dupproducer", "bitproducer"): the lease
	// name and the state's kind.
	Kind string `validate:"required"`
	// Producer makes the morsels and bites.
	Producer Producer `validate:"required"`
	// Queue receives the tasks, and its visible depth is checked against
	// MaxQueueSize before each bite.
	Queue queue.Queue `validate:"required"`
	// State keeps the state between invocations.
	State StateStore `validate:"required"`
	// Lease ensures one invocation of Kind runs at a time.
	Lease lease.Lease `validate:"required"`
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
	// Notifier is told when a run completes, when an invocation fails and
	// when one gives up morsels without completing the run
	// (notify.EventRunCompleted, notify.EventRunFailed,
	// notify.EventMorselsFailed; default notify.Log). An invocation stopped by its context being cancelled
	// (a shutdown) is not a failure to announce; a failed notification is
	// logged and changes nothing else.
	Notifier notify.Notifier
	// Runs, when set, records each run and its task count (RunRecorder).
	Runs RunRecorder
	// MaxQueueSize stops the invocation when the queue has at least this
	// many visible messages (default DefaultMaxQueueSize).
	MaxQueueSize int64
	// BiteSize is the most items one bite covers (default
	// DefaultBiteSize).
	BiteSize int
	// SendsInFlight is how many batches of a bite's tasks are sent at
	// once (default DefaultSendsInFlight; 1 sends one at a time). The
	// state is saved after a bite only once all of them are acknowledged.
	SendsInFlight int
	// MorselAttempts is how many steps of one morsel may fail in a row
	// before the morsel is given up for the run (Morsel.Failed; default
	// DefaultMorselAttempts). A failed step is retried at the morsel's
	// next turn, after the other morsels' steps.
	MorselAttempts int
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

// defaultConfig holds the values WithDefaults gives a Config's zero fields.
var defaultConfig = Config{
	LeaseTTL:         DefaultLeaseTTL,
	MaxQueueSize:     DefaultMaxQueueSize,
	BiteSize:         DefaultBiteSize,
	MorselAttempts:   DefaultMorselAttempts,
	SendsInFlight:    DefaultSendsInFlight,
	ProgressInterval: DefaultProgressInterval,
	StartWindow:      DefaultStartWindow,
}

// WithDefaults returns c with unset optional fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	if c.Holder.ID == "" {
		c.Holder = lease.Self(c.Clock.Now())
	}
	defaults.Fill(&c, defaultConfig)
	c.Notifier = notify.Or(c.Notifier, c.Logger)
	return c
}

func (c Config) validate() error {
	p := validate.Struct("looping: Config", c)
	p.Check(c.LeaseTTL >= 3*time.Second, "LeaseTTL", c.LeaseTTL, "be at least 3s")
	p.Check(c.MaxQueueSize >= 0, "MaxQueueSize", c.MaxQueueSize, "not be negative")
	p.Check(c.BiteSize >= 0, "BiteSize", c.BiteSize, "not be negative")
	p.Check(c.MorselAttempts >= 0, "MorselAttempts", c.MorselAttempts, "not be negative")
	p.Check(c.SendsInFlight >= 0 && c.SendsInFlight <= 64, "SendsInFlight", c.SendsInFlight, "be between 0 and 64")
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
		return nil, err
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

	if h, ok := c.Producer.(Follower); ok {
		if ferr := h.Follow(kctx); ferr != nil {
			if kctx.Err() != nil {
				return sum, fmt.Errorf("looping: %s: follow: %w", c.Kind, ferr)
			}
			// The run goes on; the next invocation follows again.
			l.log.Warn("following the producer's outstanding work failed", "error", ferr)
		}
	}
	r := &runner{Loop: l, ctx: kctx, sum: &sum}
	return sum, r.run()
}

// announce tells the Notifier about a completed run, a failed invocation
// (not about one stopped by a cancelled context), and an invocation that
// gave up morsels.
func (l *Loop) announce(ctx context.Context, sum Summary) {
	switch {
	case sum.Stopped == StopError && ctx.Err() != nil: // a shutdown
		return
	case sum.Stopped != StopDone && sum.Stopped != StopError && sum.NewlyFailed == 0:
		return
	}
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := l.cfg.Notifier.Notify(nctx, sum.Event()); err != nil {
		l.log.Warn("notification not sent", "error", err)
	}
}
