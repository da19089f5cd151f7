package workman

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// A long poll in flight when shutdown begins is not hung up on: SQS keeps
// waiting on its side and would hand a message that arrives meanwhile to a
// caller that is gone, leaving it invisible for the whole visibility
// timeout. Workman lets the poll answer and releases what it brought.
func TestShutdownReleasesWhatAWatchBrings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, harnessOpts{vt: 5 * time.Minute, serverSidePolls: true,
			handler: processors.HandlerFunc(func(context.Context, *task.Task) error { return nil }),
			cfg:     func(c *Config) { c.IdlePollWait = 20 * time.Second }})
		h.start()
		// The queue is quiet: a watch (long poll) is in flight.
		h.advance(3 * time.Second)
		if len(h.recs[0].receives()) == 0 {
			t.Fatal("no receive in flight")
		}
		h.cancel()
		settle()
		h.put(0, noopTask("late"))
		if err := h.stop(time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, m := range h.queues[0].Messages() {
			if m.State != memqueue.Visible {
				t.Fatalf("message sent during shutdown is %s (visible at %v, now %v), want visible at once", m.State, m.VisibleAt, h.clk.Now())
			}
		}
		if n := len(h.queues[0].Messages()); n != 1 {
			t.Fatalf("%d messages, want the one sent during shutdown", n)
		}
	})
}

// Waiting for a long poll at shutdown does not lengthen the grace period:
// it counts from the moment shutdown begins.
func TestGracePeriodCountsFromShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h *harness
		var cancelledAt time.Time
		h = newHarness(t, harnessOpts{vt: time.Hour, serverSidePolls: true,
			handler: processors.HandlerFunc(func(ctx context.Context, _ *task.Task) error {
				<-ctx.Done()
				cancelledAt = h.clk.Now()
				return ctx.Err()
			}),
			cfg: func(c *Config) { c.IdlePollWait = 20 * time.Second; c.GracePeriod = 5 * time.Second }})
		h.put(0, noopTask("long"))
		h.start()
		h.advance(2 * time.Second) // the task runs; the queue is watched
		stopAt := h.clk.Now()
		if err := h.stop(time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := cancelledAt.Sub(stopAt); got != 5*time.Second {
			t.Fatalf("the running task was cancelled %v after shutdown began, want the 5s grace period", got)
		}
	})
}

// A queue that is safe to hang up on (the in-memory one) has its long
// poll cancelled: shutdown does not wait for it.
func TestShutdownCancelsASafePoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, harnessOpts{vt: 5 * time.Minute,
			handler: processors.HandlerFunc(func(context.Context, *task.Task) error { return nil }),
			cfg:     func(c *Config) { c.IdlePollWait = 20 * time.Second }})
		h.start()
		h.advance(3 * time.Second)
		stopAt := h.clk.Now()
		if err := h.stop(time.Minute); err != nil {
			t.Fatal(err)
		}
		if took := h.clk.Now().Sub(stopAt); took >= time.Second {
			t.Fatalf("shutdown took %v of a 20s poll; a safe poll is cancelled at once", took)
		}
	})
}
