// Package queue defines Mill's message queue: the Queue interface and its
// contract (at-least-once delivery, visibility timeouts, batch operations with
// per-entry errors). Implementations live in sub-packages: sqsqueue (Amazon SQS
// through aws-sdk-go-v2) and memqueue (in memory, for unit tests and the
// embedded dev mode); claimcheck is a decorator that moves bodies too large
// for a message to blob storage. queuetest is the conformance suite the
// implementations pass. See docs/ARCHITECTURE.md, Queues.
package queue
