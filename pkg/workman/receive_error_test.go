package workman

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

// TestReceiveErrorsRetried: a receive that keeps failing — here as
// sqsqueue's receives fail when SQS stalls, with a *sqsqueue.TimeoutError
// — does not stop the queue's receiver: it tries again after a backoff
// doubling from QueueBackoffMin to QueueBackoffMax, and once receives work
// again every task runs exactly once.
func TestReceiveErrorsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const failures = 8
		var n atomic.Int32
		rec := &recorder{}
		h := newHarness(t, harnessOpts{handler: rec,
			fault: func(int) func(string, int) error {
				return func(op string, _ int) error {
					if op == memqueue.OpReceive && n.Add(1) <= failures {
						return &sqsqueue.TimeoutError{Action: "ReceiveMessage", After: 21 * time.Second, Host: "sqs.example", Err: errors.New("context deadline exceeded")}
					}
					return nil
				}
			}})
		rec.clk = h.clk
		for i := range 3 {
			h.put(0, noopTask(fmt.Sprint(i)))
		}
		h.start()
		if !h.advanceUntil(10*time.Minute, func() bool { return h.queues[0].Len() == 0 }) {
			t.Fatalf("receiver stopped: %d receives, %d runs, %d messages left", n.Load(), len(rec.get()), h.queues[0].Len())
		}
		if got := len(rec.get()); got != 3 {
			t.Fatalf("%d runs of 3 tasks", got)
		}
		if d := h.dlq.Len(); d != 0 {
			t.Fatalf("%d dead letters", d)
		}
		// The gaps between the failed receives are the backoff: 1 s
		// doubling, at most 30 s.
		times := h.recs[0].receives()
		if len(times) < failures+1 {
			t.Fatalf("%d receives, want the %d failed ones and more", len(times), failures)
		}
		want := DefaultQueueBackoffMin
		for i := 1; i <= failures; i++ {
			if gap := times[i].Sub(times[i-1]); gap != want {
				t.Errorf("receive %d came %v after the failed one before it, want %v", i, gap, want)
			}
			want = min(2*want, DefaultQueueBackoffMax)
		}
	})
}

// stallQueue never answers its first stalls receives: each waits until
// its caller's context ends, as a request to a stalled SQS endpoint does.
type stallQueue struct {
	queue.Queue
	stalls atomic.Int32
	ended  atomic.Int32 // stalled receives that returned
}

func (s *stallQueue) Receive(ctx context.Context, n int, wait time.Duration) ([]*queue.Message, error) {
	if s.stalls.Add(-1) >= 0 {
		<-ctx.Done()
		s.ended.Add(1)
		return nil, ctx.Err()
	}
	return s.Queue.Receive(ctx, n, wait)
}

// TestStalledReceiveRetried: a receive the queue never answers is cut by
// Workman's own bound (the receive's wait plus CallTimeout) even if the
// queue sets no deadline of its own, and the receiver goes on.
func TestStalledReceiveRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stalls = 3
		sq := &stallQueue{}
		sq.stalls.Store(stalls)
		rec := &recorder{}
		h := newHarness(t, harnessOpts{handler: rec, cfg: func(c *Config) {
			sq.Queue = c.Queues[0]
			c.Queues[0] = sq
		}})
		rec.clk = h.clk
		h.put(0, noopTask("a"), noopTask("b"))
		h.start()
		// Workman's manager runs on the fake clock, its request deadlines
		// on the bubble's time: each round lets a stalled receive's
		// deadline pass (time.Sleep in a synctest bubble returns once
		// every goroutine is blocked, moving the bubble's clock, not
		// waiting), then the receiver's backoff (the fake clock).
		for i := 0; sq.ended.Load() < stalls && i < 2*stalls; i++ {
			settle()
			time.Sleep(DefaultIdlePollWait + DefaultCallTimeout) // the longest receive deadline
			h.advance(DefaultQueueBackoffMax)
		}
		if !h.advanceUntil(time.Minute, func() bool { return h.queues[0].Len() == 0 }) {
			t.Fatalf("receiver stopped: %d stalled receives ended, %d runs, %d messages left", sq.ended.Load(), len(rec.get()), h.queues[0].Len())
		}
		if got := sq.ended.Load(); got != stalls {
			t.Fatalf("%d stalled receives ended, want %d", got, stalls)
		}
		if got := len(rec.get()); got != 2 {
			t.Fatalf("%d runs of 2 tasks", got)
		}
	})
}
