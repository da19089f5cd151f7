package workman

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// TestExtenderRetriesAtItsPace: a failed extension is retried about once a
// second (and not pulled forward into an immediate retry by the window that
// lets messages due close together share a call).
func TestExtenderRetriesAtItsPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		attempts := runRefusedExtension(t, errors.New("throttled"))
		// Due at 5 s, then retried at 6, 7, 8 and 9 s.
		if attempts < 3 || attempts > 6 {
			t.Fatalf("%d extension attempts in the first 9 s, want about 5", attempts)
		}
	})
}

// TestExtenderDropsWhatCannotBeExtended: an extension refused because the
// receipt is stale (queue.ErrReceiptInvalid: the message was deleted or
// redelivered) or because the request is one the queue will never accept
// (queue.ErrInvalid: SQS keeps a message in flight at most 12 hours in all)
// cannot succeed when asked again, so the extender stops extending that
// message rather than asking every second until the task ends.
func TestExtenderDropsWhatCannotBeExtended(t *testing.T) {
	for _, cause := range []error{queue.ErrReceiptInvalid, queue.ErrInvalid} {
		t.Run(cause.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if n := runRefusedExtension(t, fmt.Errorf("refused: %w", cause)); n != 1 {
					t.Fatalf("%d extension attempts in the first 9 s, want 1 (then dropped)", n)
				}
			})
		})
	}
}

// runRefusedExtension runs one task longer than its message's 10 s
// visibility timeout on a queue that refuses every visibility change with
// cause, and returns how many changes were asked for within the first 9 s
// (the extension falls due at half the timeout, 5 s).
func runRefusedExtension(t *testing.T, cause error) int32 {
	t.Helper()
	var clk *clock.Fake
	var attempts atomic.Int32
	started := make(chan struct{}, 1)
	h := newHarness(t, harnessOpts{vt: 10 * time.Second,
		fault: func(int) func(string, int) error {
			return func(op string, _ int) error {
				if op == memqueue.OpChangeVisibility {
					attempts.Add(1)
					return cause
				}
				return nil
			}
		},
		handler: processors.HandlerFunc(func(ctx context.Context, _ *task.Task) error {
			select {
			case started <- struct{}{}:
			default:
			}
			return clock.Sleep(ctx, clk, time.Hour)
		})})
	clk = h.clk
	h.put(0, noopTask("x"))
	h.start()
	if !h.advanceUntil(time.Second, func() bool { return len(started) == 1 }) {
		t.Fatal("the task did not start")
	}
	h.advance(8 * time.Second)
	return attempts.Load()
}
