package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// AttrTraceparent is the SQS message attribute carrying a task's W3C trace
// context (the traceparent header's value; tracestate is not carried).
const AttrTraceparent = "traceparent"

// MaxAttributes is SQS's limit of message attributes on one message.
// Send adds AttrTraceparent only to an entry with at most MaxAttributes-2
// attributes, leaving room for the claim check's reference.
const MaxAttributes = 10

// maxTraceparent bounds the attribute value read: a version-00 traceparent
// is 55 characters; a longer one (a future version) is read up to this.
const maxTraceparent = 256

// ScopeName is the instrumentation scope of Mill's spans.
const ScopeName = "github.com/millfleet/mill"

// Tracing is Mill's tracing: a tracer of an OpenTelemetry provider and the
// W3C trace-context propagator. A nil *Tracing is tracing off: every
// method then does nothing and costs nothing (no allocation), so callers
// hold a *Tracing and never test it.
type Tracing struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
}

// New returns tracing through tp; a nil tp is tracing off (nil).
func New(tp trace.TracerProvider) *Tracing {
	if tp == nil {
		return nil
	}
	return &Tracing{tracer: tp.Tracer(ScopeName)}
}

// On reports whether t traces.
func (t *Tracing) On() bool { return t != nil }

// Tracer is t's tracer (a no-op one when t is off).
func (t *Tracing) Tracer() trace.Tracer {
	if t == nil {
		return noopTracer
	}
	return t.tracer
}

// Inject returns attrs with AttrTraceparent set to ctx's span context, in
// a new map (attrs is not changed); attrs itself when ctx has no valid
// span context or attrs has no room left (see MaxAttributes).
func (t *Tracing) Inject(ctx context.Context, attrs map[string]string) map[string]string {
	if t == nil || !trace.SpanContextFromContext(ctx).IsValid() || len(attrs) > MaxAttributes-2 {
		return attrs
	}
	c := propagation.MapCarrier{}
	t.prop.Inject(ctx, c)
	v := c.Get(AttrTraceparent)
	if v == "" {
		return attrs
	}
	out := make(map[string]string, len(attrs)+1)
	for k, x := range attrs {
		out[k] = x
	}
	out[AttrTraceparent] = v
	return out
}

// Remote returns the span context a message's attributes carry, or an
// invalid one. The attribute is untrusted input: a missing, malformed,
// oversized or otherwise hostile value is ignored (an invalid span
// context: the caller's span becomes a new root); it never fails.
func (t *Tracing) Remote(attrs map[string]string) trace.SpanContext {
	if t == nil {
		return trace.SpanContext{}
	}
	v, ok := attrs[AttrTraceparent]
	if !ok || len(v) < 55 || len(v) > maxTraceparent {
		return trace.SpanContext{}
	}
	sc := trace.SpanContextFromContext(t.prop.Extract(context.Background(), propagation.MapCarrier{AttrTraceparent: v}))
	if !sc.IsValid() {
		return trace.SpanContext{}
	}
	return sc
}

// StartTask starts the span of one task run from a received message:
// a consumer span whose parent is the trace context the message carries
// (Remote), or a new root. end ends it, recording err as its status. With
// t off it returns ctx and a no-op end.
func (t *Tracing) StartTask(ctx context.Context, queueName string, attrs map[string]string, messageID string) (context.Context, func(taskType string, err error)) {
	if t == nil {
		return ctx, noEnd
	}
	if sc := t.Remote(attrs); sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	} else {
		ctx = trace.ContextWithSpanContext(ctx, trace.SpanContext{}) // a root, whatever ctx held
	}
	ctx, span := t.tracer.Start(ctx, queueName+" process", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.system", "aws_sqs"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", queueName),
			attribute.String("messaging.message.id", messageID)))
	return ctx, func(taskType string, err error) {
		if taskType != "" {
			span.SetAttributes(attribute.String("mill.task.type", taskType))
		}
		endSpan(span, err)
	}
}

func noEnd(string, error) {}

// endSpan records err (if any) on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
