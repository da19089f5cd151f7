package processors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/millfleet/mill/pkg/task"
)

// Handler processes one task. Its outcome is its error:
//
//   - nil: the task is done; its message is deleted.
//   - an error wrapped with Permanent: retrying cannot help; the task goes to
//     the dead-letter queue at once.
//   - an error made by RetryAfter: the task is sent again after that delay
//     with attempts+1 (the bit check's "wait 5 minutes").
//   - an error made by Release: the task was not run, or was stopped, for a
//     reason outside it (a fleet-wide pause of its type): its message is
//     made visible again at once and no attempt is counted.
//   - an outage of a dependency (IsUnavailable: an UnavailableError, or
//     a driver's error that says the dependency does not answer): no
//     attempt is counted; Workman opens that dependency's circuit and
//     hands the task back (pkg/workman).
//   - its store throttled it (IsThrottled: S3 SlowDown, DynamoDB or SNS
//     throttling, or the store's learnt request limit, pkg/aimd, refused
//     it a turn): released with a delay, no attempt counted, no circuit.
//   - any other error: the task is retried with exponential backoff and goes
//     to the dead-letter queue when it has failed Workman's MaxAttempts
//     times (--max-attempts, default 3).
//
// Handle must honour ctx: it carries the per-type timeout and is cancelled on
// hard shutdown. Handlers must be idempotent: a task may be delivered more than
// once.
type Handler interface {
	Handle(ctx context.Context, t *task.Task) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t *task.Task) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, t *task.Task) error { return f(ctx, t) }

// Middleware wraps a Handler with cross-cutting behaviour.
type Middleware func(Handler) Handler

// Chain applies mws to h so that the first middleware is the outermost.
func Chain(h Handler, mws ...Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return "permanent: " + e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as permanent: the task goes straight to the dead-letter
// queue. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// Permanentf is Permanent(fmt.Errorf(format, args...)).
func Permanentf(format string, args ...any) error {
	return Permanent(fmt.Errorf(format, args...))
}

// Permanent implements the interface IsPermanent looks for.
func (e *permanentError) Permanent() bool { return true }

// IsPermanent reports whether err (or an error it wraps) says that
// retrying cannot help: it was marked Permanent, or it says so of itself
// with a method Permanent() bool that reports true. The domain's errors
// for what a task names but cannot exist do (internal/base/permanent): an
// account or store the registry does not know (stores.ErrUnknownAccount,
// stores.ErrUnknownStore), an ID no store accepts (storage.ErrInvalidID),
// an item a store refuses to touch because its files are not as the
// provider writes them (storage.ErrUnsafe: a symbolic link or a forged
// sidecar), bytes in an archival storage class with no restored copy
// (storage.ErrArchived: a restore takes hours, Workman's retries minutes).
// Those fail the same way on every retry whichever processor resolves
// them, so they are dead-lettered at once (docs/ARCHITECTURE.md, Safety).
func IsPermanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// releasedError marks a task handed back to its queue untouched.
type releasedError struct{ why string }

func (e *releasedError) Error() string { return "released: " + e.why }

// Release returns the outcome of a task that was not run (or was stopped)
// for a reason outside the task, why: Workman makes its message visible
// again at once, without counting an attempt or sending a copy.
func Release(why string) error { return &releasedError{why: why} }

// IsReleased reports whether err (or an error it wraps) was made by
// Release, and with which reason.
func IsReleased(err error) (why string, ok bool) {
	var r *releasedError
	if errors.As(err, &r) {
		return r.why, true
	}
	return "", false
}

// RetryAfterError asks for the task to be sent again after Delay.
type RetryAfterError struct {
	Delay time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("retry after %s", e.Delay)
	}
	return fmt.Sprintf("retry after %s: %v", e.Delay, e.Err)
}
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter returns an error asking for a retry after d, with reason err
// (which may be nil).
func RetryAfter(d time.Duration, err error) error { return &RetryAfterError{Delay: d, Err: err} }

// RetryDelay returns the delay asked for by a RetryAfter error in err's chain.
func RetryDelay(err error) (time.Duration, bool) {
	var r *RetryAfterError
	if errors.As(err, &r) {
		return r.Delay, true
	}
	return 0, false
}
