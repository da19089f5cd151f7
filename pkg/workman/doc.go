// Package workman is Mill's worker manager: it receives tasks from an ordered
// list of queues and runs them on a bounded pool of workers
// (docs/ARCHITECTURE.md, Workman).
//
// What a Manager does, in the order a message meets it:
//
//   - Receiving. Each queue has its own receiver, so a slow or empty queue
//     never holds up another. A queue that answered with a full batch has a
//     backlog and receives batches of 10 (wait 1 s, so an empty answer is
//     authoritative) whenever the budget below has room; a queue that
//     answered with fewer is watched with a long poll for one message
//     (20 s, --long-poll-wait), which SQS answers as soon as a message
//     arrives. While a queue has a backlog, the queues below it are not
//     received from (unless they have a minimum share) and every quiet queue
//     above it is watched, so a new message there is picked up within a
//     round trip. When every queue is quiet (idle), a single long poll goes
//     round the queues — the top queue every other turn — so an idle
//     instance costs 3 requests a minute: a message on the top queue is
//     picked up within one long-poll wait (20 s), on any other within one
//     round (2·(queues−1) waits: 200 s for six queues). Work this manager
//     sent with a delay (a retry) does not wait for the rotation: its queue
//     is watched as soon as the delay ends (wake.go). A receive that fails,
//     or that the queue does not answer within its wait plus CallTimeout (a
//     stalled SQS), is logged ("receive failed") and tried again after
//     QueueBackoffMin doubling to QueueBackoffMax; a receiver stops only at
//     shutdown.
//   - Dispatching. One dispatcher hands each free worker the held message of
//     the highest queue (strict priority); within a queue, the message of
//     the account with the fewest tasks running, the earliest received
//     among equals (fair.go: a batch goes round-robin across its accounts,
//     so one account's backlog does not hold every worker while another's
//     messages are held; which messages SQS delivers first is its fair
//     queue's business, pkg/queue). A message received while a higher
//     queue's state was unknown (at startup, or when the idle rotation finds
//     work) waits until that queue has answered, and is released if it turns
//     out to have a backlog. An unanswered long poll answers "empty" after
//     four times the slowest of the last 16 round trips of receives that
//     expected messages and brought some (at least 50 ms; ReceiveWait, 1 s,
//     before the first), since SQS answers within a round trip when a message
//     is there: strict priority costs a start of a few round trips, not a
//     second. A higher queue answering over four times slower than the recent
//     round trips loses its priority until it answers: the tasks started
//     meanwhile, and the messages then held (at most one batch), run first.
//     MinShare gives a lower queue a floor: a deficit counter over task starts
//     earns it its fraction of every start while a higher queue has a backlog,
//     and the next free worker goes to it when one start is due; starts it got
//     on slots no higher message was waiting for are paid back (up to one
//     batch). The floor counts starts, not worker time: a share of 0.2 for
//     tasks five times as long as the higher queue's gives it about half the
//     workers' time; and the higher queue's batches shrink by the share's
//     quota (2 of 10 for 0.2), so it costs a few more receives.
//   - Holding. At most one batch (10 messages) is held beyond the busy
//     workers: a batch is received only when no message of its queue is
//     still held and Workers+10 minus the messages held, running or being
//     received leaves room for it. Watches take no room: a message arriving
//     on a watched queue is received at once even when the batch is full,
//     so at most one more message per watched queue may be held.
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
//     then deletes it; Config.OnDeadLetter is then told of the task (the
//     bit report records a dead-lettered check, bitreport.DeadLettered).
//     Panics in processors are recovered and count as failures. On claim-checked queues (pkg/queue/claimcheck) a reference
//     whose blob is gone or does not match is dead-lettered as undecodable,
//     one whose key the claim check does not own (claimcheck.ErrRefused) as
//     permanent; one whose blob cannot be read now is left to reappear
//     after its visibility timeout. Workman reads the decorator's typed
//     verdict (queue.Message.Unresolved), never a message attribute.
//     Config.Outcomes (OutcomeObserver; the record of runs) is told every
//     decoded task's outcome — done and dead-lettered before the message
//     is deleted, and a failure there leaves the message to be redelivered
//     (an outcome is never lost, the observer is idempotent); a failed
//     attempt after its retry is sent. An observer that is a
//     RequestCounter has each attempt of the tasks it counts run with a
//     fresh pricing.Counter, which pkg/awsconfig's middleware fills with
//     the attempt's AWS requests, and is handed the counts with the
//     outcome (TaskOutcome.Requests); Workman's own requests are not the
//     task's. Other tasks get no counter and cost nothing more.
//   - Queue wait (timing.go). Each task run (not released, not cancelled
//     at shutdown) is reported to an Observer that is a
//     metrics.TaskTimer: its queue and type, the wait from its message's
//     SentAt (SQS SentTimestamp, asked for in the ReceiveMessage call that
//     brought it, so no request of its own; a retry's wait includes its
//     delay), its run time and its attempt number. The recorders keep them
//     as histograms for p50/p99 (pkg/metrics).
//   - Pauses. A queue the Config's Pauser reports paused (the fleet's
//     pauses, pkg/fleet) is not received from; a handler that returns
//     processors.Release (a task of a paused type) has its message made
//     visible again at once, without counting an attempt.
//   - Outages (circuit.go). A task whose outcome says a dependency does
//     not answer (processors.IsUnavailable: the bit log's PostgreSQL,
//     DynamoDB, a store, SNS) did not fail: its message is made visible
//     again at once and no attempt is counted. The dependency's circuit
//     opens; its task type and queue are learnt as needing it, and while
//     it is open held tasks of that type are handed back unrun and the
//     queue is not received from (a queue mixing types stops for all of
//     them, as with a pause). Config.Probes[dependency] (or its service's,
//     for "dynamodb <host>") is asked every ProbeInterval (5 s) and the
//     circuit closes when it answers; without a probe the circuit closes
//     on trial after 5 s, doubling to ProbeMax (1 min) while the next task
//     finds it down again. On closing, the queues it held back are woken.
//     Manager.Outages lists the open circuits: the fleet registry's
//     heartbeat shows them, with the state degraded.
//   - Tracing (Config.Tracing, pkg/telemetry; nil: off, at no cost). Each
//     decoded task runs in a span whose parent is the trace context its
//     message carries (a new root without one, or with a malformed one),
//     so the processor's calls join the sender's trace; its retry is sent
//     in that trace.
//   - Throttling (throttle.go). A task whose store throttled it
//     (processors.IsThrottled: S3 SlowDown, DynamoDB or SNS throttling
//     after the SDK's retries, or a turn the store's learnt request limit,
//     pkg/aimd, would not give it within its MaxWait — workman's 2 s,
//     five times that for a task that has had a turn of that store, so
//     work half done is finished, not redone) did not fail and found no
//     outage: its message is made visible again after the delay asked for
//     (5 s by default) and up to half again at random, no attempt is counted, no circuit opens (the
//     other stores behind the same endpoint keep going), and its queue is
//     woken when the delay ends.
//   - Shutdown. When Run's ctx ends the manager stops receiving, releases
//     held messages (visibility 0), lets running tasks finish within
//     GracePeriod (counted from then), then cancels them and releases their
//     messages, flushes pending deletes and returns nil. A long poll in
//     flight is not hung up on but waited for (at most IdlePollWait), and
//     what it brings is released: SQS goes on waiting for a caller that hung
//     up and would hand it a message that then stays invisible for the
//     whole visibility timeout. Only a queue that is safe to hang up on
//     (queue.HangUpSafe: the in-memory one) has its poll cancelled.
package workman
