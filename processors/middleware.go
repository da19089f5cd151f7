package processors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/millfleet/mill/pkg/task"
)

// Results of one handler call, as logged and counted by the middleware
// (Result classifies an error into one of them).
const (
	ResultSuccess    = "success"     // nil error
	ResultFailure    = "failure"     // plain error: retried with backoff
	ResultRetryAfter = "retry_after" // RetryAfter: retried after the asked delay
	ResultPermanent  = "permanent"   // Permanent: dead-lettered at once
	ResultTimeout    = "timeout"     // the task's deadline passed
	ResultCanceled   = "canceled"    // cancelled (hard shutdown)
	ResultPanic      = "panic"       // the handler panicked (see Recover)
	ResultReleased   = "released"    // Release: handed back to the queue, not an attempt
	// a dependency does not answer (IsUnavailable): handed back, not an attempt
	ResultUnavailable = "unavailable"
)

// Result classifies the outcome err of a handler call. ctx is the context
// the handler ran with; it tells a timeout from a cancellation when the
// handler returned ctx's error.
func Result(ctx context.Context, err error) string {
	var pe *PanicError
	switch {
	case err == nil:
		return ResultSuccess
	case errors.As(err, &pe):
		return ResultPanic
	case IsPermanent(err):
		return ResultPermanent
	}
	if _, ok := IsReleased(err); ok {
		return ResultReleased
	}
	if _, _, ok := IsThrottled(err); ok {
		return ResultThrottled
	}
	if _, ok := IsUnavailable(err); ok {
		return ResultUnavailable
	}
	if _, ok := RetryDelay(err); ok {
		return ResultRetryAfter
	}
	if errors.Is(err, context.DeadlineExceeded) || (ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)) {
		return ResultTimeout
	}
	if errors.Is(err, context.Canceled) || (ctx != nil && errors.Is(ctx.Err(), context.Canceled)) {
		return ResultCanceled
	}
	return ResultFailure
}

type queueKey struct{}

// WithQueue returns ctx carrying the name of the queue the task came from;
// Workman sets it so middleware can log it.
func WithQueue(ctx context.Context, queue string) context.Context {
	return context.WithValue(ctx, queueKey{}, queue)
}

// QueueName returns the queue name carried by ctx, or "".
func QueueName(ctx context.Context) string {
	s, _ := ctx.Value(queueKey{}).(string)
	return s
}

// DefaultMaxAttempts is Workman's default attempt limit (its
// --max-attempts): the number of failures after which a task is
// dead-lettered.
const DefaultMaxAttempts = 3

// Attempts is what a handler is told of a task's retries.
type Attempts struct {
	// Done is the number of failed attempts before this one (the task's
	// attempts): 0 on the first.
	Done int
	// Limit is the number of failures after which Workman dead-letters the
	// task (its MaxAttempts): the attempt with Done = Limit-1 is the last.
	Limit int
}

type attemptsKey struct{}

// WithAttempts returns ctx carrying a; Workman sets it for every task, so
// a processor whose decisions depend on the attempt (the bit check's
// "wait, then decide on the last attempt") needs no copy of Workman's
// configuration.
func WithAttempts(ctx context.Context, a Attempts) context.Context {
	return context.WithValue(ctx, attemptsKey{}, a)
}

// AttemptsFrom returns the Attempts carried by ctx, with a Limit below 1
// read as DefaultMaxAttempts; ok is false when ctx carries none (a handler
// called outside Workman), and then Limit is DefaultMaxAttempts.
func AttemptsFrom(ctx context.Context) (a Attempts, ok bool) {
	a, ok = ctx.Value(attemptsKey{}).(Attempts)
	if a.Limit < 1 {
		a.Limit = DefaultMaxAttempts
	}
	return a, ok
}

// Logging logs one line per handled task with the keys queue, task_type,
// result, attempts, elapsed_ms and the task's identifying properties
// (account, store_id, space_id, content_id); failures carry error and are
// logged at Warn, successes at Info (Debug would hide the audit trail of
// what the fleet did).
func Logging(logger *slog.Logger) Middleware {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *task.Task) error {
			start := time.Now()
			err := next.Handle(ctx, t)
			res := Result(ctx, err)
			attrs := make([]any, 0, 20)
			attrs = append(attrs, "queue", QueueName(ctx), "result", res)
			attrs = append(attrs, t.LogAttrs()...)
			attrs = append(attrs, "elapsed_ms", time.Since(start).Milliseconds())
			if err != nil {
				attrs = append(attrs, "error", err.Error())
				var pe *PanicError
				if errors.As(err, &pe) {
					attrs = append(attrs, "stack", string(pe.Stack))
				}
				logger.WarnContext(ctx, "task failed", attrs...)
			} else {
				logger.InfoContext(ctx, "task done", attrs...)
			}
			return err
		})
	}
}

// Observer receives one observation per handled task. pkg/metrics
// implements it for Prometheus and CloudWatch.
type Observer interface {
	TaskDone(t task.Type, result string, elapsed time.Duration)
}

// Metrics reports every handled task to obs: its type, Result and duration.
func Metrics(obs Observer) Middleware {
	return func(next Handler) Handler {
		if obs == nil {
			return next
		}
		return HandlerFunc(func(ctx context.Context, t *task.Task) error {
			start := time.Now()
			err := next.Handle(ctx, t)
			obs.TaskDone(t.Type, Result(ctx, err), time.Since(start))
			return err
		})
	}
}

// Timeout runs each task with a deadline: timeouts[t.Type] when set, else
// def. A zero or negative duration means no deadline.
func Timeout(timeouts map[task.Type]time.Duration, def time.Duration) Middleware {
	// Copy so later changes by the caller do not race with handlers.
	tt := make(map[task.Type]time.Duration, len(timeouts))
	for k, v := range timeouts {
		tt[k] = v
	}
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *task.Task) error {
			d, ok := tt[t.Type]
			if !ok {
				d = def
			}
			if d <= 0 {
				return next.Handle(ctx, t)
			}
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return next.Handle(ctx, t)
		})
	}
}

// PanicError is the error Recover returns for a panicking handler. It counts
// as an ordinary failure (retried, then dead-lettered).
type PanicError struct {
	Value any    // what the handler panicked with
	Stack []byte // the goroutine's stack at the panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// Recover turns a panic in the handler into a *PanicError carrying the
// stack, so one bad task cannot take the worker process down.
func Recover() Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *task.Task) (err error) {
			defer func() {
				if v := recover(); v != nil {
					err = &PanicError{Value: v, Stack: debug.Stack()}
				}
			}()
			return next.Handle(ctx, t)
		})
	}
}
