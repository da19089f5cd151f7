package telemetry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/telemetry"
)

func newTracing(t *testing.T) (*telemetry.Tracing, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return telemetry.New(tp), exp
}

// TestOffIsFree: tracing off leaves the queue as it is, sends no
// attribute and allocates nothing per task.
func TestOffIsFree(t *testing.T) {
	var off *telemetry.Tracing
	q := memqueue.New("q", memqueue.Config{})
	if got := off.Queue(q); got != queue.Queue(q) {
		t.Fatalf("Queue with tracing off = %T, want the queue itself", got)
	}
	if off.PGX() != nil {
		t.Error("PGX with tracing off is not nil")
	}
	attrs := map[string]string{telemetry.AttrTraceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		c, end := off.StartTask(ctx, "q", attrs, "id")
		end("NOOP", nil)
		_ = c
	}); n != 0 {
		t.Errorf("StartTask with tracing off: %v allocations, want 0", n)
	}
}

// TestTraceCrossesTheQueue: a message sent in a span carries its context;
// the task span of its receipt is in the same trace, child of the send.
func TestTraceCrossesTheQueue(t *testing.T) {
	tr, exp := newTracing(t)
	q := tr.Queue(memqueue.New("work", memqueue.Config{}))
	ctx, root := tr.Tracer().Start(context.Background(), "producer pass")
	if err := q.Send(ctx, queue.SendEntry{Body: []byte("a"), Attributes: map[string]string{"keep": "me"}}); err != nil {
		t.Fatal(err)
	}
	root.End()
	msgs, err := q.Receive(context.Background(), 10, 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(msgs))
	}
	if msgs[0].Attributes["keep"] != "me" {
		t.Errorf("attributes %v lost the sender's", msgs[0].Attributes)
	}
	_, end := tr.StartTask(context.Background(), "work", msgs[0].Attributes, msgs[0].ID)
	end("NOOP", nil)
	spans := exp.GetSpans()
	send, process := find(t, spans, "work send"), find(t, spans, "work process")
	if process.Parent.SpanID() != send.SpanContext.SpanID() || process.SpanContext.TraceID() != root.SpanContext().TraceID() {
		t.Errorf("process span parent %v trace %v; want child of send %v in trace %v",
			process.Parent.SpanID(), process.SpanContext.TraceID(), send.SpanContext.SpanID(), root.SpanContext().TraceID())
	}
	recv := find(t, spans, "work receive")
	if len(recv.Links) != 1 || recv.Links[0].SpanContext.SpanID() != send.SpanContext.SpanID() {
		t.Errorf("receive span links %v; want one to the send span", recv.Links)
	}
}

// TestBatchSendLinks: a batch has one create span per entry, each message
// carrying its own, and a send span linked to all of them.
func TestBatchSendLinks(t *testing.T) {
	tr, exp := newTracing(t)
	q := tr.Queue(memqueue.New("work", memqueue.Config{}))
	var es []queue.SendEntry
	for i := range 3 {
		es = append(es, queue.SendEntry{Body: []byte{byte('a' + i)}})
	}
	if err := q.Send(context.Background(), es...); err != nil {
		t.Fatal(err)
	}
	if es[0].Attributes != nil {
		t.Error("Send changed the caller's entries")
	}
	send := find(t, exp.GetSpans(), "work send")
	if len(send.Links) != 3 {
		t.Fatalf("send span has %d links, want 3", len(send.Links))
	}
	msgs, _ := q.Receive(context.Background(), 10, 0)
	seen := map[trace.SpanID]bool{}
	for _, m := range msgs {
		seen[tr.Remote(m.Attributes).SpanID()] = true
	}
	for _, l := range send.Links {
		if !seen[l.SpanContext.SpanID()] {
			t.Errorf("link %v is no message's context", l.SpanContext.SpanID())
		}
	}
}

// TestAttributeRoom: an entry that already has MaxAttributes-1 attributes
// (a dead letter has 10) is sent without a traceparent, so SQS's limit of
// 10 attributes is never passed; the claim check keeps its room.
func TestAttributeRoom(t *testing.T) {
	tr, _ := newTracing(t)
	q := tr.Queue(memqueue.New("dlq", memqueue.Config{}))
	for _, n := range []int{telemetry.MaxAttributes - 2, telemetry.MaxAttributes - 1, telemetry.MaxAttributes} {
		attrs := map[string]string{}
		for i := range n {
			attrs[fmt.Sprint("a", i)] = "x"
		}
		ctx, span := tr.Tracer().Start(context.Background(), "s")
		if err := q.Send(ctx, queue.SendEntry{Body: []byte("b"), Attributes: attrs}); err != nil {
			t.Fatal(err)
		}
		span.End()
		msgs, _ := q.Receive(context.Background(), 1, 0)
		_, has := msgs[0].Attributes[telemetry.AttrTraceparent]
		want := n <= telemetry.MaxAttributes-2
		if wantLen := n + map[bool]int{true: 1}[want]; has != want || len(msgs[0].Attributes) != wantLen {
			t.Errorf("%d attributes: traceparent sent %v, want %v (%d attributes)", n, has, want, len(msgs[0].Attributes))
		}
		_ = q.Delete(context.Background(), msgs...)
	}
}

// TestHostileTraceparent: a malformed, oversized or forged-invalid
// traceparent is ignored: the task span is a new root, nothing fails.
func TestHostileTraceparent(t *testing.T) {
	tr, exp := newTracing(t)
	for _, v := range []string{
		"", "garbage", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01", // zero trace ID
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", // zero span ID
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", // forbidden version
		"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01", // upper case
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" + strings.Repeat("-x", 200),
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\x00",
	} {
		exp.Reset()
		attrs := map[string]string{telemetry.AttrTraceparent: v}
		if sc := tr.Remote(attrs); sc.IsValid() {
			t.Errorf("Remote(%q) = %v, want invalid", v, sc)
		}
		_, end := tr.StartTask(context.Background(), "q", attrs, "m")
		end("BIT", nil)
		s := find(t, exp.GetSpans(), "q process")
		if s.Parent.IsValid() {
			t.Errorf("traceparent %q: task span has parent %v, want a new root", v, s.Parent)
		}
	}
	// A well-formed one is followed.
	good := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if sc := tr.Remote(map[string]string{telemetry.AttrTraceparent: good}); !sc.IsValid() || sc.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("Remote(%q) = %v", good, sc)
	}
}

func find(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	t.Fatalf("no span %q among %v", name, names)
	return tracetest.SpanStub{}
}
