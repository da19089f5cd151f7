// Package queuetest is the conformance suite for queue.Queue. It is an
// ordinary package so every implementation's tests can call Run with a
// Harness whose New makes fresh queues:
//
//	queuetest.Run(t, queuetest.Harness{New: newQueue, FakeTime: true, Visibility: 30 * time.Second})
//
// The suite checks the contract written on queue.Queue: exact body round
// trips (Unicode and every character SQS accepts), batches larger than
// queue.MaxBatch, receive limits (n above queue.MaxBatch is clamped, never an
// error), redelivery after the visibility timeout with ReceiveCount 2,
// extended visibility, release, delays, redrive to the dead-letter queue,
// depth by state, long polls that end when a message arrives or ctx is
// cancelled, deleting what is already gone (alone and mixed into batches of
// live receipts), per-entry errors for invalid entries, and concurrent
// senders and receivers (run it under -race). Like an SQS standard queue, an
// implementation need not deliver in order, so no case depends on order.
//
// Time-driven cases use Fixture.Advance: a fake clock's Advance for
// in-memory queues (instant, exact), a real wait for services, in which case
// the Harness gives the short visibility timeout to use and how late a
// service may be.
package queuetest
