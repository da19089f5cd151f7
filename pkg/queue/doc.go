// Package queue defines Mill's message queue: the Queue interface and its
// contract (at-least-once delivery, visibility timeouts, batch operations with
// per-entry errors). Implementations live in sub-packages: sqsqueue (Amazon SQS
// through aws-sdk-go-v2) and memqueue (in memory, for unit tests and the
// embedded dev mode); claimcheck is a decorator that moves bodies too large
// for a message to blob storage. queuetest is the conformance suite the
// implementations pass. See docs/ARCHITECTURE.md, Queues.
//
// Fairness. Every task is sent with its account as its Group
// (task.(*Task).Group): the producers, the audit path (pkg/storage/audited),
// the processors that queue follow-up work, Workman's retries, millctl
// enqueue and the dead-letter redrive. sqsqueue sends it as the SQS
// MessageGroupId of a standard queue. AWS then treats the queue as a fair
// queue (no queue setting): a tenant holding a disproportionate share of
// the in-flight messages (AWS documents more than 10% and at least 30
// messages, or more than 10% of the consumers' processing time) is
// de-prioritised, its messages delivered after the other tenants' as long
// as they have any, never dropped or delayed otherwise; ordering within a
// group is not promised as on a FIFO queue. A Group must be 1..128 ASCII
// letters, digits and punctuation (CheckGroup, checked before any
// request); an account that cannot be one is sent without a group
// (GroupFor). The emulators accept MessageGroupId on a standard queue and
// return it, but deliver in send order: moto 5.2.5 stores any value,
// LocalStack 4.14 refuses one AWS would refuse; neither de-prioritises a
// tenant, so the end-to-end fairness test runs on a stand-in of SQS fair
// queues (internal/testkit/sqsfair, on memqueue's Fair mode), and on a
// real SQS queue under `make test/aws`. Workman shares its own workers
// between the accounts of what it holds (pkg/workman).
package queue
