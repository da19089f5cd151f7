// Package memqueue is an in-memory queue.Queue with SQS standard-queue
// semantics, for unit tests and Mill's embedded dev mode.
//
// It implements the whole queue.Queue contract: visibility timeouts counted on
// an injected clock.Clock (so tests drive time with clock.Fake and never
// sleep), ApproximateReceiveCount, per-message delays, redrive to a
// dead-letter queue after Config.MaxReceiveCount receives, long-poll receives
// that end early when a message arrives or the context is cancelled, release,
// and depth by state. It is safe for concurrent use.
//
// For tests it also offers what SQS cannot: a snapshot of the stored messages
// (Messages, Len), a count of the requests the same calls would have cost on
// SQS (Requests, RequestTotal — the names match sqsqueue.Meter), and fault
// injection (Config.Fault) for per-entry batch failures, and, with
// Config.Fair, the delivery order of an SQS fair queue (fair.go), which the
// emulators do not have.
package memqueue
