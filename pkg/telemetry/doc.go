// Package telemetry is Mill's tracing with OpenTelemetry: one trace runs
// from a producer's send, across the SQS hop, to Workman's receive, the
// processor and the processor's S3, DynamoDB, SNS and PostgreSQL calls.
//
// Off by default, and free when off: a nil *Tracing is tracing off, every
// method of it does nothing, allocates nothing and returns what it was
// given (Queue returns the queue itself, AWS leaves the SDK configuration
// alone, PGX returns nil). Start turns it on from a setting (an OTLP/HTTP
// endpoint; internal/wiring's --otlp-endpoint or OTEL_EXPORTER_OTLP_ENDPOINT).
//
// The pieces, each installed once by internal/wiring:
//
//   - Queue decorates a queue.Queue (outside the claim check). Send puts the
//     W3C trace context in one string message attribute, AttrTraceparent
//     ("traceparent", the header's value; tracestate is not carried). One
//     entry travels with its send span's context (a producer span, child of
//     the caller's); a batch gives each entry a create span of its own and
//     has one send span linked to them all. SQS allows 10 attributes a
//     message: the claim check uses one ("MillClaimCheck"), the wire
//     formats none (they are the body, which the trace context never
//     enters, so the JSON envelope and the Java .properties text stay byte
//     for byte as they were); an entry that already has more than 8 (a
//     dead letter has 10) is sent without the trace context. Receive has a
//     receive span linked to the context each message carries.
//   - Workman (Config.Tracing) runs each decoded task in a process span
//     (StartTask) whose parent is the context its message carries, so the
//     processor's calls are in the producer's trace; the retry it sends
//     continues the trace. A message without the attribute (sent by
//     DuraCloud's Java producers, or before tracing was on) starts a new
//     root.
//   - AWS adds a client span per SDK operation ("S3.GetObject", covering
//     the SDK's retries) to an aws.Config, so every client built from it
//     is traced: an aws-sdk-go-v2 middleware of Mill's own.
//   - PGX is a pgx.QueryTracer giving each query a client span
//     ("postgresql SELECT"); the SQL text is recorded (cut at 1 KiB), its
//     arguments never.
//
// The trace context is untrusted input (docs/ARCHITECTURE.md, Safety): a
// missing, malformed, oversized or invalid traceparent (Remote) is
// ignored and the task span is a new root. It never fails a task, is never
// logged as a fault and never reaches a recorded fact: it only parents
// spans, which go to the configured collector and nowhere else.
package telemetry
