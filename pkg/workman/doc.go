// Package workman is Mill's worker manager: it receives tasks from an ordered
// list of queues and runs them on a bounded pool of workers
// (docs/ARCHITECTURE.md, Workman).
//
// What a Manager does, in the order a message meets it:
//
//   - Polling. Queues are asked in strict priority order, highest first; after
//     a receive that returned messages it starts again at the top. Receives
//     ask for full batches of 10 with a short wait (default 1 s; a 0-second
//     poll samples only some SQS servers and can answer empty when the queue
//     is not). A queue that answered empty is not asked again until its own
//     backoff expires (1 s doubling to 30 s, reset when it returns
//     messages), so a busy low-priority queue does not pay for empty higher
//     ones on every batch. When every queue answered empty the manager
//     idles, 1 min doubling to 8 min, and meanwhile keeps a 20 s long poll
//     on the top queue so urgent work starts within 20 s.
//   - Holding. At most one batch (10 messages) is held beyond the busy
//     worker slots: the manager receives only when Workers+10 minus the
//     messages it already holds or runs leaves room for a full batch.
//   - Visibility. Every held or running message is extended to its queue's
//     visibility timeout when half of it has passed, many messages per
//     ChangeVisibility call. A failed extension is retried until the
//     message is finished; only a receipt the queue no longer knows stops it.
//   - Outcome (see processors.Handler). Success: the message is deleted in
//     batches (flushed at 10 or within 1 s; failed entries retried, and an
//     entry that keeps failing is logged and left to be redelivered — a
//     duplicate, never a loss). Failure: a copy with attempts+1 is sent with
//     a delay (RetryBase·2^attempts, at most 15 min, or what
//     processors.RetryAfter asked for) and only then is the original deleted,
//     so a crash in between duplicates rather than loses. The MaxAttempts-th
//     failure, a permanent error, an undecodable body or an unknown task type
//     sends the message to the dead-letter queue (format: DeadLetter) and
//     then deletes it. Panics in processors are recovered and count as
//     failures. On claim-checked queues (pkg/queue/claimcheck) a reference
//     whose blob is gone or does not match is dead-lettered as undecodable,
//     one whose key the claim check does not own (claimcheck.ErrRefused) as
//     permanent; one whose blob cannot be read now is left to reappear
//     after its visibility timeout.
//   - Pauses. A queue the Config's Pauser reports paused (the fleet's
//     pauses, pkg/fleet) is not received from; a handler that returns
//     processors.Release (a task of a paused type) has its message made
//     visible again at once, without counting an attempt.
//   - Shutdown. When Run's ctx ends the manager stops receiving, releases
//     held messages (visibility 0), lets running tasks finish within
//     GracePeriod, then cancels them and releases their messages, flushes
//     pending deletes and returns nil.
package workman
