package workman

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/telemetry"
	"github.com/millfleet/mill/processors"
)

// Defaults of Config.
const (
	DefaultWorkers            = 16
	DefaultReceiveWait        = time.Second
	DefaultQueueBackoffMin    = time.Second
	DefaultQueueBackoffMax    = 30 * time.Second
	DefaultIdlePollWait       = queue.MaxWait // 20 s
	DefaultTaskTimeout        = 30 * time.Minute
	DefaultMaxAttempts        = processors.DefaultMaxAttempts
	DefaultRetryBase          = 10 * time.Second
	DefaultRetryMax           = queue.MaxDelay // 15 min, SQS's limit
	DefaultGracePeriod        = 30 * time.Second
	DefaultHardStopTimeout    = 10 * time.Second
	DefaultDeleteFlush        = time.Second
	DefaultOperationAttempts  = 5
	DefaultOperationRetryBase = 200 * time.Millisecond
	DefaultCallTimeout        = 30 * time.Second
	DefaultProbeInterval      = 5 * time.Second
	DefaultProbeMax           = time.Minute
)

// Observer receives what the manager itself sees (task results come from the
// processors.Metrics middleware). *prometheusmetrics.Recorder, *cloudwatchmetrics.Recorder
// and metrics.Multi implement it.
type Observer interface {
	// Received reports one receive call on queue that returned n messages.
	Received(queue string, n int)
	// InFlight changes the number of messages held or running by delta.
	InFlight(delta int)
	// DeadLettered reports a task sent to the dead-letter queue (reason is
	// one of the Reason constants).
	DeadLettered(t task.Type, reason string)
}

// Config configures a Manager. Queues, DeadLetter and Handler are required;
// every other zero field takes the default named beside it.
type Config struct {
	// Queues to receive from, highest priority first.
	Queues []queue.Queue
	// DeadLetter receives tasks that failed MaxAttempts times or cannot be
	// processed at all, as DeadLetter envelopes.
	DeadLetter queue.Queue `validate:"required"`
	// Handler processes tasks (usually a processors.Mux behind middleware).
	Handler processors.Handler `validate:"required"`
	// ProcessorName names the processor of a task type in dead-letter
	// metadata (e.g. (*processors.Mux).ProcessorName); default the type.
	ProcessorName func(task.Type) string

	// Workers is the number of tasks run at once (DefaultWorkers).
	Workers int
	// ReceiveWait is the wait of a batch receive from a queue with a
	// backlog (DefaultReceiveWait, 1 s), and the longest a long poll on a
	// queue of unknown state must wait unanswered before the queue counts
	// as empty: once receives have answered with messages, it counts as
	// empty after four times the slowest recent answer time, at least
	// 50 ms (settle.go). It must be positive: a 0-second poll is not
	// authoritative.
	ReceiveWait time.Duration
	// QueueBackoffMin/Max bound how long a queue whose receive failed is
	// left alone (DefaultQueueBackoffMin 1 s doubling to
	// DefaultQueueBackoffMax 30 s, reset by a receive that works).
	QueueBackoffMin, QueueBackoffMax time.Duration
	// IdlePollWait is the wait of the long poll that watches a queue
	// without a backlog (DefaultIdlePollWait, 20 s, SQS's longest): it
	// costs one request per wait and returns as soon as a message arrives.
	IdlePollWait time.Duration
	// MinShare gives a queue (by name) a floor: while a higher queue has a
	// backlog it still gets at least this fraction of the task starts, as
	// long as it has work (default none: strict priority). Each fraction is
	// in (0, 1) and together they are below 1.
	MinShare map[string]float64

	// TaskTimeouts is the deadline of a task by type; types not listed get
	// DefaultTaskTimeout (Config field; default the DefaultTaskTimeout
	// constant, 30 min). A negative value means no deadline.
	TaskTimeouts       map[task.Type]time.Duration
	DefaultTaskTimeout time.Duration

	// MaxAttempts is the number of failures after which a task is
	// dead-lettered (DefaultMaxAttempts, 3).
	MaxAttempts int
	// RetryBase and RetryMax shape the re-send delay after a failure:
	// RetryBase·2^attempts, at most RetryMax (DefaultRetryBase 10 s,
	// DefaultRetryMax 15 min, which is also SQS's limit).
	RetryBase, RetryMax time.Duration
	// Format is the wire format of re-sent tasks (default task.FormatJSON).
	Format task.Format

	// GracePeriod is how long running tasks may go on after shutdown
	// begins before they are cancelled (DefaultGracePeriod, 30 s).
	GracePeriod time.Duration
	// HardStopTimeout is how long Run waits for cancelled tasks to return
	// before it releases their messages anyway (DefaultHardStopTimeout).
	HardStopTimeout time.Duration
	// DeleteFlush is the longest a finished message waits for its batch
	// delete (DefaultDeleteFlush, 1 s); a full batch of 10 goes at once.
	DeleteFlush time.Duration
	// OperationAttempts and OperationRetryBase bound the retries of a
	// failed send, delete or release (DefaultOperationAttempts,
	// DefaultOperationRetryBase doubling). Visibility extensions are
	// retried for as long as the message is held.
	OperationAttempts  int
	OperationRetryBase time.Duration
	// CallTimeout bounds every queue call the manager makes (beyond a
	// receive's own wait), so a request the service never answers cannot
	// stall polling, extension or deletes (DefaultCallTimeout, 30 s). A
	// timed-out call counts as failed and is retried like any failure.
	CallTimeout time.Duration

	// WorkerID identifies this worker in dead-letter metadata and logs
	// (default hostname-pid).
	WorkerID string
	// Clock drives every wait and timer (default the real clock).
	Clock clock.Clock
	// Logger (default slog.Default()); the manager derives per-queue
	// loggers from it.
	Logger *slog.Logger
	// Observer receives receive counts, in-flight changes and dead-letter
	// events (default none).
	Observer Observer
	// Outcomes, when set, is told the outcome of every decoded task
	// (OutcomeObserver; the record of runs).
	Outcomes OutcomeObserver
	// Pauser, when set, is asked before every receive whether the queue
	// is paused (the fleet's pauses, pkg/fleet); a paused queue is not
	// received from until it is resumed. (Tasks of a paused type that
	// were already received are handed back by a middleware with
	// processors.Release.)
	Pauser Pauser

	// Probes ask a dependency (by the name processors.IsUnavailable gives
	// it: "postgres", "dynamodb <host>", …) whether it answers again; an
	// open circuit with a probe is probed every ProbeInterval
	// (DefaultProbeInterval, 5 s) and closes when the probe succeeds (a
	// dependency named "<service> <host>" without a probe of its own takes
	// its service's). A
	// dependency without one is tried again by closing its circuit after
	// ProbeInterval, doubling up to ProbeMax (DefaultProbeMax, 1 min) while
	// it stays down.
	Probes                  map[string]Probe
	ProbeInterval, ProbeMax time.Duration

	// OnDeadLetter, when set, is told of every decoded task once it is in
	// the dead-letter queue (reason is one of the Reason constants, cause
	// the error), within CallTimeout; its error is logged. The bit report
	// uses it so a space's report does not wait for a check that was
	// dead-lettered (bitreport.DeadLettered).
	OnDeadLetter func(ctx context.Context, t *task.Task, reason string, cause error) error
	// Tracing, when set, runs each decoded task in a span whose parent is
	// the trace context its message carries (telemetry.AttrTraceparent),
	// or a new root; the retry it sends continues that trace. Nil: off,
	// at no cost (pkg/telemetry).
	Tracing *telemetry.Tracing
}

// Pauser says which queues are paused. Implementations must be safe for
// concurrent use and answer from memory: it is asked before every receive.
type Pauser interface {
	QueuePaused(queue string) bool
}

// DefaultWorkerID returns hostname-pid.
func DefaultWorkerID() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "unknown"
	}
	return h + "-" + strconv.Itoa(os.Getpid())
}

// defaultConfig holds the values WithDefaults gives a Config's zero fields.
var defaultConfig = Config{
	Workers:            DefaultWorkers,
	ReceiveWait:        DefaultReceiveWait,
	QueueBackoffMin:    DefaultQueueBackoffMin,
	QueueBackoffMax:    DefaultQueueBackoffMax,
	IdlePollWait:       DefaultIdlePollWait,
	DefaultTaskTimeout: DefaultTaskTimeout,
	MaxAttempts:        DefaultMaxAttempts,
	RetryBase:          DefaultRetryBase,
	RetryMax:           DefaultRetryMax,
	GracePeriod:        DefaultGracePeriod,
	HardStopTimeout:    DefaultHardStopTimeout,
	DeleteFlush:        DefaultDeleteFlush,
	OperationAttempts:  DefaultOperationAttempts,
	OperationRetryBase: DefaultOperationRetryBase,
	CallTimeout:        DefaultCallTimeout,
	ProbeInterval:      DefaultProbeInterval,
	ProbeMax:           DefaultProbeMax,
	Observer:           nopObserver{},
	ProcessorName:      func(t task.Type) string { return string(t) },
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	defaults.Fill(&c, defaultConfig)
	if c.WorkerID == "" {
		c.WorkerID = DefaultWorkerID()
	}
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	return c
}

// validate reports every problem of a defaulted config at once.
func (c Config) validate() error {
	p := validate.Struct("workman: Config", c)
	p.Require("Queues", len(c.Queues) > 0)
	seen := map[string]bool{}
	for i, q := range c.Queues {
		if q == nil {
			p.Check(false, fmt.Sprintf("Queues[%d]", i), nil, "not be nil")
			continue
		}
		p.Check(!seen[q.Name()], "Queues", q.Name(), "be listed once")
		seen[q.Name()] = true
	}
	if c.DeadLetter != nil {
		p.Check(!seen[c.DeadLetter.Name()], "DeadLetter", c.DeadLetter.Name(), "not be a work queue too")
	}
	p.Check(c.Workers >= 1, "Workers", c.Workers, "be at least 1")
	p.Check(c.ReceiveWait > 0 && c.ReceiveWait <= queue.MaxWait, "ReceiveWait", c.ReceiveWait,
		"be within (0, %s] (a 0-second poll is not authoritative)", queue.MaxWait)
	p.Check(c.QueueBackoffMin > 0 && c.QueueBackoffMax >= c.QueueBackoffMin, "QueueBackoffMin..Max",
		fmt.Sprintf("%s..%s", c.QueueBackoffMin, c.QueueBackoffMax), "be 0 < min <= max")
	p.Check(c.IdlePollWait > 0 && c.IdlePollWait <= queue.MaxWait, "IdlePollWait", c.IdlePollWait, "be within (0, %s]", queue.MaxWait)
	var total float64
	for name, f := range c.MinShare {
		top := len(c.Queues) > 0 && c.Queues[0] != nil && c.Queues[0].Name() == name
		p.Check(seen[name], "MinShare", fmt.Sprintf("%q", name), "be one of the queues")
		p.Check(!seen[name] || !top, "MinShare", fmt.Sprintf("%q", name), "not be the top queue, which never waits for a higher one")
		p.Check(f > 0 && f < 1, "MinShare", fmt.Sprintf("%q %v", name, f), "be within (0, 1)")
		total += f
	}
	p.Check(total < 1, "MinShare", fmt.Sprintf("total %v", total), "be below 1")
	p.Check(c.MaxAttempts >= 1, "MaxAttempts", c.MaxAttempts, "be at least 1")
	p.Check(c.RetryBase > 0 && c.RetryMax >= c.RetryBase && c.RetryMax <= queue.MaxDelay, "RetryBase..RetryMax",
		fmt.Sprintf("%s..%s", c.RetryBase, c.RetryMax), "be 0 < base <= max <= %s", queue.MaxDelay)
	p.Check(c.Format == task.FormatJSON || c.Format == task.FormatProperties, "Format", c.Format, "be JSON or properties")
	p.Check(c.GracePeriod >= 0, "GracePeriod", c.GracePeriod, "not be negative")
	p.Check(c.HardStopTimeout > 0, "HardStopTimeout", c.HardStopTimeout, "be positive")
	p.Check(c.DeleteFlush > 0, "DeleteFlush", c.DeleteFlush, "be positive")
	p.Check(c.OperationAttempts >= 1 && c.OperationRetryBase > 0, "OperationAttempts × OperationRetryBase",
		fmt.Sprintf("%d × %s", c.OperationAttempts, c.OperationRetryBase), "be at least 1 attempt and a positive delay")
	p.Check(c.CallTimeout > 0, "CallTimeout", c.CallTimeout, "be positive")
	p.Check(c.ProbeInterval > 0 && c.ProbeMax >= c.ProbeInterval, "ProbeInterval..ProbeMax",
		fmt.Sprintf("%s..%s", c.ProbeInterval, c.ProbeMax), "be 0 < interval <= max")
	for ty, d := range c.TaskTimeouts {
		p.Check(d != 0, fmt.Sprintf("TaskTimeouts[%s]", ty), d, "not be 0 (a negative value means no deadline)")
	}
	return p.Err()
}

type nopObserver struct{}

func (nopObserver) Received(string, int)           {}
func (nopObserver) InFlight(int)                   {}
func (nopObserver) DeadLettered(task.Type, string) {}
