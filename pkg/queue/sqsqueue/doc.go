// Package sqsqueue is the Amazon SQS implementation of queue.Queue, on
// aws-sdk-go-v2.
//
// Open resolves a queue by name. Every multi-message call uses the batch
// APIs (SendMessageBatch, DeleteMessageBatch, ChangeMessageVisibilityBatch),
// chunked by SQS's 10 entries and by its total batch payload size. Every
// per-entry failure of a batch call is inspected: one with a portable
// meaning is final; any other that is not the sender's fault is retried with
// backoff (Config.Retries times); what still fails is returned in a
// *queue.BatchError by argument index. SQS error codes map to the portable
// errors: a missing queue is queue.ErrNotFound, an oversized message
// queue.ErrTooLarge, a receipt handle that no longer names an in-flight
// delivery queue.ErrReceiptInvalid (for ChangeVisibility; Delete and Release
// treat it as success, per the contract). SQS says the last in several ways
// — ReceiptHandleIsInvalid, MessageNotInflight, and, for a deleted message or
// an expired handle, InvalidParameterValue naming the ReceiptHandle
// parameter — in the query codes, the JSON types and the emulators' variants
// of them; see portable in errors.go.
//
// Every request has a deadline (timeout.go): a receive its long-poll wait
// plus Config.CallTimeout (SQS answers a long poll within its wait), any
// other request CallTimeout (10 s), covering the SDK's retries of it. An
// endpoint that accepts a request and never answers would otherwise hold
// the caller forever; past the deadline the call fails with a
// *TimeoutError, an outage of "sqs <host>" to processors.IsUnavailable and
// not the caller's own context.DeadlineExceeded. It is a context deadline
// per call rather than a response-header timeout of the shared HTTP
// transport, which serves every AWS client and would have to allow the
// longest long poll to all of them. Nor is it per attempt (the SDK has no
// such option), on purpose: SQS answers in milliseconds, so an attempt
// that takes seconds is a stall a retry rarely escapes, and an attempt cut
// short loses its answer — a send may then be queued twice, a receive
// hides the messages it took for their visibility timeout and counts
// towards their maxReceiveCount. A first attempt that stalls therefore
// uses up the deadline without an SDK retry; the caller tries again later.
//
// A send is at least once too: when the answer to a SendMessageBatch is
// lost after SQS stored the messages, the SDK sends them again and the
// queue holds them twice, under two message IDs. Each send the SDK made
// more than once (read from its retry metadata, retry.GetAttemptResults,
// success or failure) is logged as one Warn line to Config.Logger (queue,
// action, attempts, entries, the message IDs SQS returned, the first
// attempt's error): what an operator needs to explain a task seen twice
// (resend.go). Processors are idempotent; nothing else is done about it.
//
// Meter counts SQS requests per operation as an SDK middleware, so retried
// HTTP attempts count too (a resent SendMessageBatch counts once per
// attempt; there is no separate count of resends, which are not requests
// and would break Total); benchmarks and metrics use it. Queues are
// provisioned by internal/ops/setup (`millctl setup`, and setup.Queue.Ensure in
// tests), not here.
package sqsqueue
