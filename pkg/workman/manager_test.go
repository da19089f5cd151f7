package workman

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

func TestConfigValidateReportsEverything(t *testing.T) {
	_, err := New(Config{Workers: -1, ReceiveWait: -time.Second, MaxAttempts: -2})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Config.Queues is required", "Config.DeadLetter is required", "Config.Handler is required", "Config.Workers -1", "Config.ReceiveWait", "Config.MaxAttempts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// TestHighPriorityDrainedFirst: both queues full from the start; one
// worker, so the start order is exact. Every high task starts before any
// low one — including the low message the startup watch received before
// the high queue had answered: it is released, not run.
func TestConfigMinShare(t *testing.T) {
	qs := []queue.Queue{memqueue.New("top", memqueue.Config{}), memqueue.New("mid", memqueue.Config{}), memqueue.New("low", memqueue.Config{})}
	base := Config{Queues: qs, DeadLetter: memqueue.New("dlq", memqueue.Config{}), Handler: processors.HandlerFunc(func(context.Context, *task.Task) error { return nil })}
	ok := base
	ok.MinShare = map[string]float64{"mid": 0.1, "low": 0.2}
	if _, err := New(ok); err != nil {
		t.Fatalf("valid shares refused: %v", err)
	}
	bad := base
	bad.MinShare = map[string]float64{"top": 0.1, "nope": 0.2, "mid": 1.5, "low": -0.1}
	_, err := New(bad)
	for _, want := range []string{`"top": must not be the top queue`, `"nope": must be one of the queues`, `"mid" 1.5`, `"low" -0.1`, "total 1.7"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestHighPriorityDrainedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		h := newHarness(t, harnessOpts{queues: 2, handler: rec, cfg: func(c *Config) { c.Workers = 1 }})
		rec.clk = h.clk
		for i := range 30 {
			h.put(1, noopTask(fmt.Sprintf("low-%d", i)))
			h.put(0, noopTask(fmt.Sprintf("high-%d", i)))
		}
		h.start()
		if !h.advanceUntil(5*time.Minute, func() bool { return len(rec.get()) == 60 }) {
			t.Fatalf("ran %d of 60 tasks", len(rec.get()))
		}
		for i, c := range rec.get() {
			if (i < 30) != (c.queue == "q0") {
				t.Fatalf("start %d is %s from %s: every high task must start before any low one", i, c.id, c.queue)
			}
		}
		// One batch beyond the busy worker, plus at most the one message
		// each queue's watch may bring in.
		if _, maxIn := h.obs.snapshot(); maxIn > 1+queue.MaxBatch+2 {
			t.Fatalf("held %d messages, more than workers + one batch + one per watch (%d)", maxIn, 1+queue.MaxBatch+2)
		}
	})
}

// TestAtMostOneBatchHeld blocks the workers and checks the manager holds
// exactly one batch beyond them, and receives only full batches.
func TestAtMostOneBatchHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var running, maxRunning atomic.Int32
		h := newHarness(t, harnessOpts{handler: processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			n := running.Add(1)
			for {
				m := maxRunning.Load()
				if n <= m || maxRunning.CompareAndSwap(m, n) {
					break
				}
			}
			defer running.Add(-1)
			select {
			case <-gate:
			case <-ctx.Done():
			}
			return nil
		}), cfg: func(c *Config) { c.Workers = 3 }})
		for i := range 100 {
			h.put(0, noopTask(fmt.Sprint(i)))
		}
		h.start()
		h.advanceUntil(10*time.Second, func() bool { return running.Load() == 3 })
		h.advance(5 * time.Second) // nothing more is received while 8 wait
		// The first watch brought in one message, then a full batch.
		if in, maxIn := h.obs.snapshot(); in != 11 || maxIn != 11 {
			t.Fatalf("in flight %d (max %d), want the watch's one and a batch: 3 running + 8 held", in, maxIn)
		}
		// Once the held ones have started, the next full batch comes in.
		for range 8 {
			gate <- struct{}{}
			settle()
		}
		h.advanceUntil(10*time.Second, func() bool { in, _ := h.obs.snapshot(); return in == 13 })
		h.advance(5 * time.Second)
		if in, maxIn := h.obs.snapshot(); in != 13 || maxIn != 13 {
			t.Fatalf("in flight %d (max %d), want 3 running + 10 held", in, maxIn)
		}
		if r := h.queues[0].Requests()[memqueue.OpReceive]; r != 3 {
			t.Fatalf("%d receives for 21 messages, want 3 (a watch, then full batches)", r)
		}
		// Let tasks finish one by one: receives stay full batches of 10.
		for range 79 {
			gate <- struct{}{}
			settle()
		}
		close(gate)
		h.advanceUntil(time.Minute, func() bool { return h.queues[0].Len() == 0 })
		if h.queues[0].Len() != 0 {
			t.Fatalf("%d messages left", h.queues[0].Len())
		}
		if _, maxIn := h.obs.snapshot(); maxIn > 13 {
			t.Fatalf("max in flight %d > workers + one batch", maxIn)
		}
		h.obs.mu.Lock()
		nonEmpty := h.obs.received - h.obs.empties
		h.obs.mu.Unlock()
		if nonEmpty != 11 {
			t.Fatalf("%d non-empty receives for 100 messages, want the watch's 1 and 10 batches", nonEmpty)
		}
		if m := maxRunning.Load(); m != 3 {
			t.Fatalf("max concurrent tasks %d, want 3", m)
		}
	})
}

func TestFailuresRetryThenDeadLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fn: func(ctx context.Context, t *task.Task) error { return errors.New("disk on fire") }}
		h := newHarness(t, harnessOpts{handler: rec, cfg: func(c *Config) {
			c.ProcessorName = func(task.Type) string { return "noop-proc" }
		}})
		rec.clk = h.clk
		h.put(0, noopTask("f1"))
		h.start()
		if !h.advanceUntil(5*time.Minute, func() bool { return h.dlq.Len() == 1 }) {
			t.Fatalf("not dead-lettered; calls %+v", rec.get())
		}
		calls := rec.get()
		if len(calls) != 3 {
			t.Fatalf("%d attempts, want 3: %+v", len(calls), calls)
		}
		for i, c := range calls {
			if c.attempts != i {
				t.Errorf("call %d had attempts=%d", i, c.attempts)
			}
			// The handler is told the attempt and the limit on its context.
			if want := (processors.Attempts{Done: i, Limit: DefaultMaxAttempts}); c.ctxAtt != want {
				t.Errorf("call %d: context attempts %+v, want %+v", i, c.ctxAtt, want)
			}
		}
		// Exponential delays: 10 s then 20 s.
		if d := calls[1].at.Sub(calls[0].at); d < 10*time.Second || d > 12*time.Second {
			t.Errorf("first retry after %v, want ~10s", d)
		}
		if d := calls[2].at.Sub(calls[1].at); d < 20*time.Second || d > 22*time.Second {
			t.Errorf("second retry after %v, want ~20s", d)
		}
		d := readDLQ(t, h.dlq)[0]
		if d.Reason != ReasonFailed || d.Attempts != 3 || d.TaskType != task.TypeNoop || d.Processor != "noop-proc" ||
			d.SourceQueue != "q0" || d.Worker != "test-worker" || !strings.Contains(d.Error, "disk on fire") || d.Time.IsZero() {
			t.Fatalf("dead letter %+v", d)
		}
		orig, err := task.Decode(d.Body)
		if err != nil || orig.Get("id") != "f1" || orig.Attempts != 2 {
			t.Fatalf("dead-letter body %q: %v", d.Body, err)
		}
		h.advance(5 * time.Second)
		if n := h.queues[0].Len(); n != 0 {
			t.Fatalf("%d messages left on the work queue", n)
		}
	})
}

func readDLQ(t *testing.T, q *memqueue.Queue) []*DeadLetter {
	t.Helper()
	msgs, err := q.Receive(context.Background(), 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []*DeadLetter
	for _, m := range msgs {
		d, err := DecodeDeadLetter(m)
		if err != nil {
			t.Fatalf("decode dead letter %q: %v", m.Body, err)
		}
		out = append(out, d)
	}
	return out
}

func TestStraightToDeadLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fn: func(ctx context.Context, t *task.Task) error {
			if t.Get("id") == "perm" {
				return processors.Permanentf("bad input")
			}
			return nil
		}}
		h := newHarness(t, harnessOpts{handler: rec})
		rec.clk = h.clk
		h.put(0, noopTask("perm"))
		bad := []byte("this is not a task \x00")
		if err := h.queues[0].Send(context.Background(), queue.SendEntry{Body: bad}); err != nil {
			t.Fatal(err)
		}
		h.put(0, task.New("FROBNICATE", map[string]string{"id": "alien"}))
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return h.dlq.Len() == 3 }) {
			t.Fatalf("dead letters: %d", h.dlq.Len())
		}
		byReason := map[string]*DeadLetter{}
		for _, d := range readDLQ(t, h.dlq) {
			byReason[d.Reason] = d
		}
		if d := byReason[ReasonPermanent]; d == nil || d.Attempts != 1 || !strings.Contains(d.Error, "bad input") || d.Processor != "NOOP" {
			t.Errorf("permanent: %+v", d)
		}
		if d := byReason[ReasonUndecodable]; d == nil || string(d.Body) != string(bad) || d.TaskType != "" {
			t.Errorf("undecodable: %+v", d)
		}
		if d := byReason[ReasonUnknownType]; d == nil || d.TaskType != "FROBNICATE" {
			t.Errorf("unknown type: %+v", d)
		}
		if len(rec.get()) != 1 {
			t.Errorf("handler ran %d times, want once (only the permanent one)", len(rec.get()))
		}
		h.advance(2 * time.Second)
		if n := h.queues[0].Len(); n != 0 {
			t.Fatalf("%d messages left", n)
		}
	})
}

func TestPanicCountsAsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fn: func(ctx context.Context, t *task.Task) error {
			if t.Attempts == 0 {
				panic("processor bug")
			}
			return nil
		}}
		h := newHarness(t, harnessOpts{handler: rec})
		rec.clk = h.clk
		h.put(0, noopTask("p"))
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return len(rec.get()) == 2 }) {
			t.Fatalf("calls %+v", rec.get())
		}
		if c := rec.get(); c[1].attempts != 1 {
			t.Fatalf("after a panic the retry has attempts=%d", c[1].attempts)
		}
		h.advance(2 * time.Second)
		if h.queues[0].Len() != 0 || h.dlq.Len() != 0 {
			t.Fatalf("left: queue %d, dlq %d", h.queues[0].Len(), h.dlq.Len())
		}
	})
}

func TestRetryAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{fn: func(ctx context.Context, t *task.Task) error {
			if t.Attempts == 0 {
				return processors.RetryAfter(5*time.Minute, errors.New("not yet"))
			}
			return nil
		}}
		h := newHarness(t, harnessOpts{handler: rec})
		rec.clk = h.clk
		h.put(0, noopTask("r"))
		h.start()
		if !h.advanceUntil(10*time.Minute, func() bool { return len(rec.get()) == 2 }) {
			t.Fatalf("calls %+v", rec.get())
		}
		c := rec.get()
		if d := c[1].at.Sub(c[0].at); d < 5*time.Minute || d > 5*time.Minute+25*time.Second {
			t.Fatalf("retried after %v, want 5m (+ at most one idle long poll)", d)
		}
		if RetryDelay(0, processors.RetryAfter(time.Hour, nil), 10*time.Second, queue.MaxDelay) != queue.MaxDelay {
			t.Fatal("RetryAfter beyond 15 min is not capped")
		}
		if got := RetryDelay(9, errors.New("x"), 10*time.Second, queue.MaxDelay); got != queue.MaxDelay {
			t.Fatalf("RetryDelay(9) = %v", got)
		}
	})
}

// TestLongTaskIsExtended: a task running three times the visibility
// timeout is not redelivered, and its extensions share calls.
func TestLongTaskIsExtended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var clk *clock.Fake
		var calls atomic.Int32
		h := newHarness(t, harnessOpts{vt: 10 * time.Second, handler: processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			calls.Add(1)
			return clock.Sleep(ctx, clk, 30*time.Second)
		})})
		clk = h.clk
		for i := range 4 {
			h.put(0, noopTask(fmt.Sprint(i)))
		}
		h.start()
		if !h.advanceUntil(2*time.Minute, func() bool { return h.queues[0].Len() == 0 }) {
			t.Fatalf("%d messages left", h.queues[0].Len())
		}
		if n := calls.Load(); n != 4 {
			t.Fatalf("handler ran %d times for 4 tasks: a message was redelivered", n)
		}
		// 4 messages × ~6 extensions, batched: far fewer calls than messages×extensions.
		if n := h.queues[0].Requests()[memqueue.OpChangeVisibility]; n == 0 || n > 8 {
			t.Fatalf("%d ChangeVisibility calls", n)
		}
	})
}

func TestExtensionFailureIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var clk *clock.Fake
		var failures atomic.Int32
		h := newHarness(t, harnessOpts{vt: 10 * time.Second,
			fault: func(int) func(string, int) error {
				return func(op string, i int) error {
					if op == memqueue.OpChangeVisibility && failures.Add(1) <= 3 {
						return errors.New("throttled")
					}
					return nil
				}
			},
			handler: processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
				return clock.Sleep(ctx, clk, 25*time.Second)
			})})
		clk = h.clk
		h.put(0, noopTask("x"))
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return h.queues[0].Len() == 0 }) {
			t.Fatal("not deleted")
		}
		if r := h.queues[0].Requests()[memqueue.OpReceive]; r < 1 {
			t.Fatal("no receive")
		}
		for _, s := range h.queues[0].Messages() {
			t.Fatalf("left: %+v", s)
		}
	})
}

func TestDeleteFailuresRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		rec := &recorder{}
		h := newHarness(t, harnessOpts{handler: rec,
			fault: func(int) func(string, int) error {
				return func(op string, i int) error {
					if op == memqueue.OpDelete && i == 0 && n.Add(1) <= 2 {
						return errors.New("internal error")
					}
					return nil
				}
			}})
		rec.clk = h.clk
		for i := range 5 {
			h.put(0, noopTask(fmt.Sprint(i)))
		}
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return h.queues[0].Len() == 0 }) {
			t.Fatalf("%d left", h.queues[0].Len())
		}
		if len(rec.get()) != 5 {
			t.Fatalf("%d runs for 5 tasks", len(rec.get()))
		}
		// One or two batches (the 1 s flush may split the five) plus two
		// retries of the failing entry.
		if r := h.queues[0].Requests()[memqueue.OpDelete]; r < 3 || r > 4 {
			t.Fatalf("%d delete calls, want 3-4 (batches + 2 retries of the failed entry)", r)
		}
	})
}

func TestDeleteThatKeepsFailingIsRedelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fail atomic.Bool
		fail.Store(true)
		rec := &recorder{}
		h := newHarness(t, harnessOpts{vt: 10 * time.Second, handler: rec,
			fault: func(int) func(string, int) error {
				return func(op string, i int) error {
					if op == memqueue.OpDelete && fail.Load() {
						return errors.New("internal error")
					}
					return nil
				}
			}})
		rec.clk = h.clk
		h.put(0, noopTask("d"))
		h.start()
		h.advanceUntil(time.Minute, func() bool { return len(rec.get()) == 2 })
		fail.Store(false)
		if !h.advanceUntil(time.Minute, func() bool { return h.queues[0].Len() == 0 }) {
			t.Fatal("never deleted")
		}
		if n := len(rec.get()); n != 2 {
			t.Fatalf("ran %d times, want 2 (redelivered once after the delete gave up)", n)
		}
	})
}

func TestGracefulShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var clk *clock.Fake
		var started atomic.Int32
		h := newHarness(t, harnessOpts{vt: time.Hour, handler: processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			started.Add(1)
			d := 2 * time.Second
			if strings.HasPrefix(tk.Get("id"), "long") {
				d = time.Hour
			}
			return clock.Sleep(ctx, clk, d)
		}), cfg: func(c *Config) { c.Workers = 4; c.GracePeriod = 10 * time.Second }})
		clk = h.clk
		h.put(0, noopTask("short-1"), noopTask("short-2"), noopTask("long-1"), noopTask("long-2"))
		for i := range 6 {
			h.put(0, noopTask(fmt.Sprintf("long-held-%d", i)))
		}
		h.start()
		h.advanceUntil(10*time.Second, func() bool { return started.Load() == 4 })
		if started.Load() != 4 {
			t.Fatalf("%d started", started.Load())
		}
		if err := h.stop(time.Minute); err != nil {
			t.Fatal(err)
		}
		// short tasks finished and were deleted; long ones and the 6 held
		// ones are visible again at once.
		msgs, err := h.queues[0].Receive(context.Background(), 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range msgs {
			tk, _ := task.Decode(m.Body)
			ids = append(ids, tk.Get("id"))
		}
		if len(ids) != 8 {
			t.Fatalf("visible after shutdown: %v, want the 2 long and 6 held", ids)
		}
		for _, id := range ids {
			if strings.HasPrefix(id, "short") {
				t.Fatalf("finished task %s was not deleted", id)
			}
		}
		if h.m.Ready() {
			t.Fatal("ready after stop")
		}
	})
}

func TestDeadLetterRoundTrip(t *testing.T) {
	when := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	for _, body := range [][]byte{[]byte(`{"v":1,"type":"DUP"}`), {0xff, 0xfe, 'x'}, {}} {
		d := &DeadLetter{Body: body, Reason: ReasonFailed, Error: strings.Repeat("e", 20000), TaskType: "DUP",
			Processor: "dup", SourceQueue: "mill-dup-high", Attempts: 3, Worker: "w-1", Time: when, MessageID: "m1", ReceiveCount: 2}
		e, err := EncodeDeadLetter(d)
		if err != nil {
			t.Fatal(err)
		}
		if e.Attributes[AttrForm] != FormEnvelope || e.Attributes[AttrReason] != ReasonFailed || len(e.Attributes[AttrError]) > 1100 {
			t.Fatalf("attributes %v", e.Attributes)
		}
		got, err := DecodeDeadLetter(&queue.Message{Body: e.Body, Attributes: e.Attributes})
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Body) != string(body) || got.Reason != d.Reason || got.Attempts != 3 || got.SourceQueue != d.SourceQueue ||
			!got.Time.Equal(when) || got.Processor != "dup" || got.Worker != "w-1" || got.ReceiveCount != 2 || len(got.Error) > MaxDeadLetterError+20 {
			t.Fatalf("round trip: %+v", got)
		}
		// Without attributes (a consumer that drops them) the envelope
		// alone is enough.
		if got2, err := DecodeDeadLetter(&queue.Message{Body: e.Body}); err != nil || string(got2.Body) != string(body) {
			t.Fatalf("envelope alone: %v", err)
		}
		raw := EncodeDeadLetterRaw(d)
		got3, err := DecodeDeadLetter(&queue.Message{Body: raw.Body, Attributes: raw.Attributes})
		if err != nil || string(got3.Body) != string(body) || got3.Attempts != 3 || got3.Reason != ReasonFailed || !got3.Time.Equal(when) {
			t.Fatalf("raw form: %+v %v", got3, err)
		}
	}
	if _, err := DecodeDeadLetter(&queue.Message{Body: []byte(`{"v":1,"type":"DUP"}`)}); !errors.Is(err, ErrNotDeadLetter) {
		t.Fatalf("plain task decoded as a dead letter: %v", err)
	}
}

// TestDeadLetterTooLargeFallsBackToRaw: a body near the size limit still
// reaches the dead-letter queue untouched.
func TestDeadLetterTooLargeFallsBackToRaw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, harnessOpts{handler: processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			return processors.Permanentf("no")
		})})
		big := noopTask("big")
		big.Set("pad", strings.Repeat(`"`, 100<<10)) // 200 KiB as a task, ~400 KiB inside an envelope
		h.put(0, big)
		h.start()
		// Generous simulated limit: encoding 400 KiB takes real time.
		if !h.advanceUntil(time.Hour, func() bool { return h.dlq.Len() == 1 }) {
			t.Fatal("not dead-lettered")
		}
		msgs, _ := h.dlq.Receive(context.Background(), 1, 0)
		if msgs[0].Attributes[AttrForm] != FormRaw {
			t.Fatalf("form %q", msgs[0].Attributes[AttrForm])
		}
		d, err := DecodeDeadLetter(msgs[0])
		if err != nil {
			t.Fatal(err)
		}
		tk, err := task.Decode(d.Body)
		if err != nil || tk.Get("id") != "big" || d.Reason != ReasonPermanent {
			t.Fatalf("decoded %+v: %v", d, err)
		}
	})
}

var _ sync.Locker = (*sync.Mutex)(nil)

// pauser is a Pauser switched by the test.
type pauser struct {
	mu     sync.Mutex
	paused map[string]bool
}

func (p *pauser) set(q string, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused[q] = on
}

func (p *pauser) QueuePaused(q string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused[q]
}

// TestPausedQueueNotReceived: a paused queue is not received from while
// the others are; once resumed its tasks run.
func TestPausedQueueNotReceived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pauser{paused: map[string]bool{"q0": true}}
		rec := &recorder{}
		h := newHarness(t, harnessOpts{queues: 2, handler: rec, cfg: func(c *Config) { c.Pauser = p }})
		rec.clk = h.clk
		h.put(0, noopTask("a1"), noopTask("a2"))
		h.put(1, noopTask("b1"), noopTask("b2"))
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return len(rec.get()) == 2 }) {
			t.Fatalf("calls %+v", rec.get())
		}
		h.advance(3 * time.Minute)
		if n := len(h.recs[0].receives()); n != 0 {
			t.Fatalf("paused queue q0 was received from %d times", n)
		}
		for _, c := range rec.get() {
			if c.queue != "q1" {
				t.Fatalf("a task of the paused queue ran: %+v", c)
			}
		}
		p.set("q0", false)
		if !h.advanceUntil(time.Minute, func() bool { return len(rec.get()) == 4 }) {
			t.Fatalf("after resume: calls %+v", rec.get())
		}
	})
}

// TestReleasedOutcome: a task whose handler returns processors.Release is
// made visible again at once, without an attempt, a copy or a dead letter.
func TestReleasedOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		rec := &recorder{fn: func(ctx context.Context, t *task.Task) error {
			if n.Add(1) == 1 {
				return processors.Release("type NOOP paused")
			}
			return nil
		}}
		h := newHarness(t, harnessOpts{handler: rec})
		rec.clk = h.clk
		h.put(0, noopTask("r"))
		h.start()
		if !h.advanceUntil(time.Minute, func() bool { return len(rec.get()) == 2 }) {
			t.Fatalf("calls %+v", rec.get())
		}
		c := rec.get()
		if c[1].attempts != 0 {
			t.Fatalf("a released task came back with attempts=%d", c[1].attempts)
		}
		// Visibility 0: the second run follows at once, not after the 30 s
		// visibility timeout nor a retry delay.
		if d := c[1].at.Sub(c[0].at); d >= 10*time.Second {
			t.Fatalf("released task ran again after %v", d)
		}
		h.advance(2 * time.Second)
		if h.queues[0].Len() != 0 || h.dlq.Len() != 0 {
			t.Fatalf("left: queue %d, dlq %d", h.queues[0].Len(), h.dlq.Len())
		}
	})
}
