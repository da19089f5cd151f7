package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
)

// ErrLost is the cause of a Keep context that was cancelled because the
// lease was lost.
var ErrLost = errors.New("lease: lost")

// KeepOptions tune Keep. The zero value is ready to use.
type KeepOptions struct {
	// Interval between renewals (default ttl/3).
	Interval time.Duration
	// Clock for the renewal timer and the expiry check (default real).
	Clock clock.Clock
	// Logger for failed renewals (default slog.Default()).
	Logger *slog.Logger
}

// Keep renews a lease that holderID holds on l every Interval (ttl/3 by
// default) until ctx ends or stop is called. expires is when the lease
// currently expires (the Holder's Expires from Acquire).
//
// The returned context is derived from ctx. It is cancelled with a cause
// wrapping ErrLost (context.Cause) when the lease is lost: a renewal answers
// ErrNotHeld, or renewals keep failing until the known expiry has passed.
// A failed renewal that is not ErrNotHeld is logged and retried at the next
// tick; with the default interval that leaves two retries before expiry.
//
// stop ends the renewals, waits for the background goroutine and returns
// the loss (wrapping ErrLost) if the lease was lost, else nil. It is safe to
// call more than once and from several goroutines. It does not release the lease.
func Keep(ctx context.Context, l Lease, name, holderID string, ttl time.Duration, expires time.Time, o KeepOptions) (kept context.Context, stop func() error) {
	clk := clock.Or(o.Clock)
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("lease", name)
	interval := o.Interval
	if interval <= 0 {
		interval = ttl / 3
	}
	if interval <= 0 {
		interval = time.Second
	}
	kctx, cancel := context.WithCancelCause(ctx)
	quit := make(chan struct{})
	done := make(chan struct{})
	var lost error
	go func() {
		defer close(done)
		for {
			t := clk.NewTimer(interval)
			select {
			case <-quit:
				t.Stop()
				return
			case <-kctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			h, err := l.Renew(kctx, name, holderID, ttl)
			switch {
			case err == nil:
				expires = h.Expires
				continue
			case errors.Is(err, ErrNotHeld):
				lost = fmt.Errorf("%w: %q: renewal refused: %v", ErrLost, name, err)
			case kctx.Err() != nil:
				return
			case !expires.IsZero() && Expired(expires, clk.Now()):
				lost = fmt.Errorf("%w: %q: expired at %s while renewals failed: %v", ErrLost, name, expires.UTC().Format(time.RFC3339), err)
			default:
				logger.Warn("lease renewal failed; retrying", "error", err, "expires", expires)
				continue
			}
			logger.Error("lease lost", "error", lost)
			cancel(lost)
			return
		}
	}()
	var once sync.Once
	stop = func() error {
		once.Do(func() { close(quit) })
		<-done
		cancel(context.Canceled)
		return lost
	}
	return kctx, stop
}
