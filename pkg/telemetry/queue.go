package telemetry

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/millfleet/mill/pkg/queue"
)

var noopTracer = noop.NewTracerProvider().Tracer("")

// Queue returns q traced (see the package doc): Send carries each entry's
// trace context in AttrTraceparent, and Send and Receive have spans. With
// t off it returns q itself.
func (t *Tracing) Queue(q queue.Queue) queue.Queue {
	if t == nil || q == nil {
		return q
	}
	if tq, ok := q.(*tracedQueue); ok && tq.t == t {
		return q
	}
	return &tracedQueue{Queue: q, t: t}
}

type tracedQueue struct {
	queue.Queue
	t *Tracing
}

// Unwrap returns the queue traced.
func (q *tracedQueue) Unwrap() queue.Queue { return q.Queue }

// HangUpSafe is the traced queue's.
func (q *tracedQueue) HangUpSafe() bool { return queue.SafeToHangUp(q.Queue) }

func (q *tracedQueue) attrs(op string, n int) trace.SpanStartOption {
	return trace.WithAttributes(attribute.String("messaging.system", "aws_sqs"),
		attribute.String("messaging.operation.type", op),
		attribute.String("messaging.destination.name", q.Name()),
		attribute.Int("messaging.batch.message_count", n))
}

// Send: one entry travels with the context of the send span (a producer
// span, child of ctx's); a batch has a create span per entry (each entry
// carries its own) and a send span linked to them.
func (q *tracedQueue) Send(ctx context.Context, entries ...queue.SendEntry) error {
	tr := q.t.tracer
	name := q.Name() + " send"
	if len(entries) <= 1 {
		ctx, span := tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer), q.attrs("send", len(entries)))
		out := entries
		if len(entries) == 1 {
			out = []queue.SendEntry{entries[0]}
			out[0].Attributes = q.t.Inject(ctx, out[0].Attributes)
		}
		err := q.Queue.Send(ctx, out...)
		endSpan(span, err)
		return err
	}
	out := make([]queue.SendEntry, len(entries))
	links := make([]trace.Link, len(entries))
	for i, e := range entries {
		cctx, cs := tr.Start(ctx, q.Name()+" create", trace.WithSpanKind(trace.SpanKindProducer), q.attrs("create", 1))
		e.Attributes = q.t.Inject(cctx, e.Attributes)
		out[i] = e
		links[i] = trace.Link{SpanContext: cs.SpanContext()}
		cs.End()
	}
	ctx, span := tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), q.attrs("send", len(entries)), trace.WithLinks(links...))
	err := q.Queue.Send(ctx, out...)
	if err != nil {
		failed := queue.FailedIndexes(err, len(entries))
		span.SetAttributes(attribute.Int("mill.failed_entries", len(failed)))
	}
	endSpan(span, err)
	return err
}

func (q *tracedQueue) Receive(ctx context.Context, max int, wait time.Duration) ([]*queue.Message, error) {
	return q.ReceiveWith(ctx, queue.ReceiveOptions{Max: max, Wait: wait})
}

// ReceiveWith has a receive span linked to the trace context each message
// received carries (a valid one: see Remote).
func (q *tracedQueue) ReceiveWith(ctx context.Context, o queue.ReceiveOptions) ([]*queue.Message, error) {
	ctx, span := q.t.tracer.Start(ctx, q.Name()+" receive", trace.WithSpanKind(trace.SpanKindClient), q.attrs("receive", 0))
	msgs, err := q.Queue.ReceiveWith(ctx, o)
	if err == nil {
		span.SetAttributes(attribute.Int("messaging.batch.message_count", len(msgs)))
		for _, m := range msgs {
			if sc := q.t.Remote(m.Attributes); sc.IsValid() {
				span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
					attribute.String("messaging.message.id", m.ID),
					attribute.String("mill.receive_count", strconv.Itoa(m.ReceiveCount))}})
			}
		}
	}
	endSpan(span, err)
	return msgs, err
}
