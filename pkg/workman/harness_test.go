package workman

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"

	"github.com/millfleet/mill/internal/testkit/slogtest"
)

// harness runs a Manager over memqueues on a fake clock.
type harness struct {
	t      *testing.T
	clk    *clock.Fake
	queues []*memqueue.Queue
	recs   []*recQueue
	dlq    *memqueue.Queue
	obs    *countObs
	m      *Manager
	cancel context.CancelFunc
	done   chan error
}

type harnessOpts struct {
	queues  int
	vt      time.Duration
	cfg     func(*Config)
	fault   func(q int) func(op string, i int) error
	handler processors.Handler
	// latency is how long queue q's receives take to answer (fake time,
	// before the queue is asked), like a network round trip.
	latency func(q int) time.Duration
	// serverSidePolls makes a receive behave as SQS's does when its caller
	// hangs up: the poll goes on waiting on the server, and a message it
	// takes is lost to the caller (in flight until its visibility timeout).
	serverSidePolls bool
}

func testLogger(t *testing.T) *slog.Logger {
	return slogtest.New(t, slog.LevelWarn)
}

func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	if o.queues == 0 {
		o.queues = 1
	}
	if o.vt == 0 {
		o.vt = 30 * time.Second
	}
	h := &harness{t: t, clk: clock.NewFake(time.Time{}), obs: &countObs{}}
	h.dlq = memqueue.New("dead-letter", memqueue.Config{Clock: h.clk})
	var qs []queue.Queue
	for i := range o.queues {
		mc := memqueue.Config{Clock: h.clk, VisibilityTimeout: o.vt}
		if o.fault != nil {
			mc.Fault = o.fault(i)
		}
		mq := memqueue.New(fmt.Sprintf("q%d", i), mc)
		h.queues = append(h.queues, mq)
		rq := &recQueue{Queue: mq, clk: h.clk, h: h}
		if o.latency != nil {
			rq.delay = o.latency(i)
		}
		rq.serverSide = o.serverSidePolls
		h.recs = append(h.recs, rq)
		qs = append(qs, rq)
	}
	cfg := Config{
		Queues: qs, DeadLetter: h.dlq, Handler: o.handler, Workers: 4,
		Clock: h.clk, Logger: testLogger(t), Observer: h.obs, WorkerID: "test-worker",
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.m.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		h.stop(time.Hour)
	})
}

// stop cancels Run and drives the clock until it returns (at most limit of
// simulated time).
func (h *harness) stop(limit time.Duration) error {
	h.cancel()
	var err error
	returned := false
	h.advanceUntil(limit, func() bool {
		select {
		case err = <-h.done:
			returned = true
			h.done <- err
			return true
		default:
			return false
		}
	})
	if !returned {
		h.t.Fatalf("Run did not return within %s of simulated time", limit)
	}
	return err
}

// settle waits until every goroutine of the test's bubble is blocked — on
// the fake clock, a channel or a queue's long poll — so the last clock
// change or signal has had all its effects. Harness tests run inside
// synctest.Test.
func settle() { synctest.Wait() }

// advanceUntil moves the fake clock forward in steps of at most a second
// (stopping exactly at timer deadlines) until cond holds or limit of
// simulated time has passed. It reports whether cond held.
func (h *harness) advanceUntil(limit time.Duration, cond func() bool) bool {
	end := h.clk.Now().Add(limit)
	for {
		settle()
		if cond() {
			return true
		}
		now := h.clk.Now()
		if !now.Before(end) {
			return false
		}
		step := min(time.Second, end.Sub(now))
		if next, ok := h.clk.NextDeadline(); ok && next.After(now) && next.Sub(now) < step {
			step = next.Sub(now)
		}
		h.clk.Advance(step)
	}
}

func (h *harness) advance(d time.Duration) { h.advanceUntil(d, func() bool { return false }) }

func (h *harness) put(q int, tasks ...*task.Task) {
	h.t.Helper()
	var es []queue.SendEntry
	for _, tk := range tasks {
		b, err := task.Encode(tk, task.FormatJSON)
		if err != nil {
			h.t.Fatal(err)
		}
		es = append(es, queue.SendEntry{Body: b})
	}
	if err := h.queues[q].Send(context.Background(), es...); err != nil {
		h.t.Fatal(err)
	}
}

func noopTask(id string) *task.Task {
	return task.New(task.TypeNoop, map[string]string{"id": id})
}

// recQueue records the time of every Receive call and of every answer
// that brought messages; it delays each receive by delay.
type recQueue struct {
	queue.Queue
	clk   clock.Clock
	h     *harness
	delay time.Duration
	// serverSide: see harnessOpts.serverSidePolls.
	serverSide bool
	mu         sync.Mutex
	times      []time.Time
	answers    []time.Time
}

func (r *recQueue) Receive(ctx context.Context, n int, wait time.Duration) ([]*queue.Message, error) {
	r.mu.Lock()
	r.times = append(r.times, r.clk.Now())
	r.mu.Unlock()
	if err := clock.Sleep(ctx, r.clk, r.delay); err != nil {
		return nil, err
	}
	caller := ctx
	if r.serverSide {
		ctx = context.WithoutCancel(ctx)
	}
	msgs, err := r.Queue.Receive(ctx, n, wait)
	if caller.Err() != nil {
		return nil, caller.Err() // the answer never reaches the caller
	}
	if len(msgs) > 0 {
		r.mu.Lock()
		r.answers = append(r.answers, r.clk.Now())
		r.mu.Unlock()
	}
	return msgs, err
}

// HangUpSafe is the memqueue's, unless receives act as SQS's do.
func (r *recQueue) HangUpSafe() bool { return !r.serverSide && queue.SafeToHangUp(r.Queue) }

func (r *recQueue) answered() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.answers...)
}

func (r *recQueue) receives() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.times...)
}

// countObs is an Observer keeping the in-flight gauge and its maximum.
type countObs struct {
	mu                sync.Mutex
	inFlight, maxIn   int
	received, empties int
	dead              map[string]int
}

func (o *countObs) Received(_ string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.received++
	if n == 0 {
		o.empties++
	}
}

func (o *countObs) InFlight(d int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.inFlight += d
	o.maxIn = max(o.maxIn, o.inFlight)
}

func (o *countObs) DeadLettered(_ task.Type, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead == nil {
		o.dead = map[string]int{}
	}
	o.dead[reason]++
}

func (o *countObs) snapshot() (inFlight, maxIn int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.inFlight, o.maxIn
}

// recorder is a handler recording each call (queue, task, fake time).
type recorder struct {
	mu    sync.Mutex
	clk   clock.Clock
	calls []call
	fn    func(ctx context.Context, t *task.Task) error
}

type call struct {
	queue    string
	id       string
	attempts int
	ctxAtt   processors.Attempts // what the context said
	at       time.Time
}

func (r *recorder) Handle(ctx context.Context, t *task.Task) error {
	r.mu.Lock()
	att, _ := processors.AttemptsFrom(ctx)
	r.calls = append(r.calls, call{queue: processors.QueueName(ctx), id: t.Get("id"), attempts: t.Attempts, ctxAtt: att, at: r.clk.Now()})
	r.mu.Unlock()
	if r.fn != nil {
		return r.fn(ctx, t)
	}
	return nil
}

func (r *recorder) get() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}
