package sqsqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/sqsfair"
	"github.com/millfleet/mill/pkg/queue/queuetest"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

// TestConformanceFairStandIn holds the fair-queue stand-in
// (internal/testkit/sqsfair), reached by this client over HTTP, to the
// whole queue contract, so the fairness tests that run on it run on an
// SQS that behaves as this package expects. Its queues are made by
// setup.Queue, as on the emulator.
func TestConformanceFairStandIn(t *testing.T) {
	srv := sqsfair.New(sqsfair.Options{Fair: true})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c := srv.Client()
	newQueue := func(t *testing.T, o queuetest.Options) queuetest.Fixture {
		ctx := context.Background()
		if o.VisibilityTimeout == 0 {
			o.VisibilityTimeout = visibility
		}
		name := t.Name()
		var f queuetest.Fixture
		sq := setup.Queue{Client: c, QueueName: sanitize(name) + "-q", VisibilityTimeout: o.VisibilityTimeout}
		if o.MaxReceiveCount > 0 {
			dl := setup.Queue{Client: c, QueueName: sanitize(name) + "-dlq", VisibilityTimeout: 30 * time.Second}
			if _, err := dl.Ensure(ctx); err != nil {
				t.Fatal(err)
			}
			dlq, err := sqsqueue.Open(ctx, c, dl.QueueName, sqsqueue.Config{})
			if err != nil {
				t.Fatal(err)
			}
			f.DeadLetter = dlq
			sq.DeadLetter, sq.MaxReceiveCount = dl.QueueName, o.MaxReceiveCount
		}
		if _, err := sq.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		q, err := sqsqueue.Open(ctx, c, sq.QueueName, sqsqueue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		f.Queue, f.Advance = q, time.Sleep
		return f
	}
	queuetest.Run(t, queuetest.Harness{New: newQueue, Visibility: visibility, Slack: time.Second})
}

// sanitize makes a test name a queue name (letters, digits, - and _, at
// most 70 characters: the name is the tail, which tells subtests apart).
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 70 {
		b = b[len(b)-70:]
	}
	return string(b)
}
