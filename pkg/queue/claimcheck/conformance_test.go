package claimcheck_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/queue/queuetest"
)

const maxMessage = 256 << 10

// newQueue makes the decorator over memqueue for the conformance suite. Its
// threshold is above the largest body the suite sends, so the suite sees
// what the decorator passes through (the too-large entry included);
// TestReceiveWithResolves covers references.
func newQueue(t *testing.T, o queuetest.Options) queuetest.Fixture {
	fc := clock.NewFake(time.Time{})
	cfg := memqueue.Config{VisibilityTimeout: o.VisibilityTimeout, Clock: fc, MaxBodyBytes: maxMessage}
	var f queuetest.Fixture
	if o.MaxReceiveCount > 0 {
		dlq := memqueue.New("dead-letter", memqueue.Config{Clock: fc})
		cfg.DeadLetter, cfg.MaxReceiveCount = dlq, o.MaxReceiveCount
		f.DeadLetter = dlq
	}
	f.Queue = claimcheck.New(memqueue.New(t.Name(), cfg), memblob.New(nil), claimcheck.Config{Threshold: 2 * maxMessage, KeyPrefix: "claims/"})
	f.Advance = fc.Advance
	return f
}

func TestConformance(t *testing.T) {
	queuetest.Run(t, queuetest.Harness{New: newQueue, FakeTime: true, Visibility: 30 * time.Second, MaxMessageBytes: maxMessage})
}

// TestReceiveWithResolves: a receive with its own visibility resolves
// references as Receive does, and holds the message for that visibility.
func TestReceiveWithResolves(t *testing.T) {
	fc := clock.NewFake(time.Time{})
	inner := memqueue.New("cc", memqueue.Config{Clock: fc, VisibilityTimeout: time.Hour})
	q := claimcheck.New(inner, memblob.New(nil), claimcheck.Config{KeyPrefix: "claims/"})
	ctx := context.Background()
	big := bigBody(1 << 20)
	if err := q.Send(ctx, queue.SendEntry{Body: big}); err != nil {
		t.Fatal(err)
	}
	ms, err := q.ReceiveWith(ctx, queue.ReceiveOptions{Max: 10, Visibility: 5 * time.Second})
	if err != nil || len(ms) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(ms))
	}
	if err := claimcheck.Unresolved(ms[0]); err != nil || !bytes.Equal(ms[0].Body, big) {
		t.Fatalf("received %d bytes, unresolved: %v", len(ms[0].Body), err)
	}
	fc.Advance(5 * time.Second)
	again, err := q.Receive(ctx, 10, 0)
	if err != nil || len(again) != 1 || !bytes.Equal(again[0].Body, big) {
		t.Fatalf("after the receive's visibility: %v, %d messages", err, len(again))
	}
}
