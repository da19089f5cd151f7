package telemetry_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"
)

// TestRetryContinuesTheTrace: a task that fails once is retried in the
// trace it was sent in: both attempts' process spans are in the sender's
// trace.
func TestRetryContinuesTheTrace(t *testing.T) {
	tr, exp := newTracing(t)
	work := tr.Queue(memqueue.New("work", memqueue.Config{}))
	dlq := memqueue.New("dlq", memqueue.Config{})
	body, err := task.Encode(task.New(task.TypeNoop, nil), task.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	ctx, pass := tr.Tracer().Start(context.Background(), "producer pass")
	if err := work.Send(ctx, queue.SendEntry{Body: body}); err != nil {
		t.Fatal(err)
	}
	pass.End()
	var n atomic.Int32
	done := make(chan struct{})
	m, err := workman.New(workman.Config{
		Queues: []queue.Queue{work}, DeadLetter: dlq, Workers: 1, Tracing: tr,
		RetryBase: time.Millisecond, IdlePollWait: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		Handler: processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			if n.Add(1) == 1 {
				return errors.New("first attempt fails")
			}
			close(done)
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, m, done, "the retry")
	var in int
	for _, s := range exp.GetSpans() {
		if s.Name == "work process" {
			if s.SpanContext.TraceID() != pass.SpanContext().TraceID() {
				t.Errorf("attempt span in trace %v, want the sender's %v", s.SpanContext.TraceID(), pass.SpanContext().TraceID())
			}
			in++
		}
	}
	if in != 2 {
		t.Errorf("%d process spans, want 2 (the attempt and its retry)", in)
	}
}
